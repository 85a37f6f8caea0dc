package weir.internal

import cats.effect.kernel.Deferred

import scala.collection.immutable.Queue as ScalaQueue

/**
 * The producers waiting for room in a [[BufferState]], let in first come, first served and one at a time
 * (ADR 0026): the waits in the order they came, whether a producer was woken and has not appended since, and
 * the free places a wake-up waits for ([[Offerers.need]]). While a woken producer has not appended, no other
 * is woken and no new offer gets in, so producers append in the order they queued.
 *
 * A wake-up can fall due without a take (a producer can queue while there is room, behind others, and the
 * one ahead of it can leave or finish), so the buffer looks for one after every take, append and cancelled
 * wait. Immutable, like the state that holds it: [[wake]] returns the wait to complete, and the buffer
 * completes it once its state is swapped.
 */
private[weir] final case class Offerers[F[_]](
    waiting: ScalaQueue[Deferred[F, Unit]],
    woken: Boolean,
    need: Int
):

  /** A producer waits, or was woken and has not appended yet: a new offer comes after it. */
  def ahead: Boolean = woken || waiting.nonEmpty

  /** A wake-up is due with `free` places: none is woken, one waits, and the places it waits for are free. */
  def due(free: Int): Boolean = !woken && waiting.nonEmpty && free >= need

  /** A new wait, behind the others. */
  def queued(space: Deferred[F, Unit]): Offerers[F] = copy(waiting = waiting.enqueue(space))

  /** The woken producer could not place all of its chunk: it waits again, ahead of those who came after it. */
  def requeuedFirst(space: Deferred[F, Unit]): Offerers[F] = copy(waiting = waiting.prepended(space))

  /** The woken producer has appended: its turn is over. */
  def appended: Offerers[F] = if woken then copy(woken = false) else this

  /** The first wait, taken out to be completed, if a wake-up is due with `free` places. */
  def wake(free: Int): Option[(Offerers[F], Deferred[F, Unit])] =
    if !due(free) then None
    else
      val (first, rest) = waiting.dequeue
      Some((copy(waiting = rest, woken = true), first))

  /**
   * A wait on `space` was cancelled: it leaves the queue or, if it was woken meanwhile (its wake-up and the
   * cancellation raced), gives up the turn it was woken for.
   */
  def forgotten(space: Deferred[F, Unit]): Offerers[F] =
    if waiting.exists(_ eq space) then copy(waiting = waiting.filterNot(_ eq space)) else copy(woken = false)

  /** No producer waits any more (the buffer stopped, and completes every wait). */
  def cleared: Offerers[F] = copy(waiting = ScalaQueue.empty, woken = false)

private[weir] object Offerers:

  /** No producer waiting for room in a buffer of `capacity` places. */
  def none[F[_]](capacity: Int): Offerers[F] = Offerers(ScalaQueue.empty, woken = false, need(capacity))

  /**
   * The room a waiting producer is woken for: half the buffer, however little it still holds. One wake-up per
   * half buffer rather than per freed place (with one-element chunks that would be one per task taken),
   * while the other half keeps the workers busy until the producer has refilled it (ADR 0015).
   */
  def need(capacity: Int): Int = math.max(1, capacity / 2)
