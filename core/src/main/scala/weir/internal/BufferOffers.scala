package weir.internal

import cats.effect.kernel.{Async, Deferred}
import fs2.Chunk
import weir.internal.BufferState.Appended
import weir.internal.Taker.Served

import scala.collection.immutable.Queue as ScalaQueue

/**
 * The offers of a [[BufferState]]: appending a producer's chunk, serving waiting takers on the way, and the
 * producers that wait for room ([[Offerers]]). Pure transitions, like every method of the state.
 */
private[weir] trait BufferOffers[F[_], A]:
  self: BufferState[F, A] =>

  /**
   * Appends what fits and hands an entry to one parked taker, the first link of the wake chain
   * ([[BufferTakes.relay]]); appends again what the serving let in; registers `space` (if given) when some of
   * the chunk is left over. The entries it leaves for parked takers do not count as unserved: the chain
   * wakes those takers before any new worker could start. `now` is when it is appended, if the run
   * measures queue waits (otherwise unread).
   * An offer not `resumed` (woken from a wait for room) queues while a producer is ahead ([[Offerers]]).
   */
  def append(
      chunk: Chunk[A],
      space: Option[Deferred[F, Unit]],
      now: Long,
      resumed: Boolean
  ): (BufferState[F, A], Appended[A]) =
    if stopped then (this, Appended(Nil, 0, 0, refused = true))
    else if !resumed && offerers.ahead then
      (space.fold(this)(d => copy(offerers = offerers.queued(d))), Appended(Nil, 0, 0, false))
    else
      var s = if resumed then copy(offerers = offerers.appended) else this
      var served: Served[A] = Nil
      var accepted = 0
      var progress = true
      while progress do
        val stored = math.min(chunk.size - accepted, s.free)
        if stored > 0 then
          s = s.enqueue(chunk.drop(accepted).take(stored), now)
          accepted += stored
        if served.isEmpty then
          val (next, more) = s.serveTakers(1)
          s = next
          served = more
        progress = stored > 0 && accepted < chunk.size
      val waiting = space match
        case Some(d) if accepted < chunk.size =>
          s.copy(offerers = if resumed then s.offerers.requeuedFirst(d) else s.offerers.queued(d))
        case _ => s
      (waiting, Appended(served, accepted, unserved(s.size - size, s.takers), refused = false))

  /**
   * Of `left` entries an append left queued, those no parked taker will get through the wake chain. The
   * takers are counted only when entries were left, which is rare: a queue's `size` walks its lists, and
   * this runs on every append.
   */
  private def unserved(left: Int, takers: ScalaQueue[Taker[A]]): Int =
    if left <= 0 then 0 else if takers.isEmpty then left else math.max(0, left - takers.size)

  private[internal] def enqueue(c: Chunk[A], now: Long): BufferState[F, A] =
    if size == 0 && front.isEmpty then
      copy(
        head = c,
        pos = 0,
        headSeq = next,
        rest = ScalaQueue.empty,
        times = times.appended(now, asHead = true),
        size = c.size,
        next = next + c.size
      )
    else
      copy(
        rest = rest.enqueue(c),
        times = times.appended(now, asHead = false),
        size = size + c.size,
        next = next + c.size
      )

  /** A wait for room on `space` was cancelled ([[Offerers.forgotten]]); the next producer may go. */
  def forgetOfferer(space: Deferred[F, Unit])(using Async[F]): (BufferState[F, A], F[Unit]) =
    copy(offerers = offerers.forgotten(space)).wakeOfferer
