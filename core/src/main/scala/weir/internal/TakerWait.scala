package weir.internal

import cats.effect.kernel.{Async, Poll}
import cats.effect.syntax.all.*
import cats.syntax.all.*
import weir.internal.BufferState.*

import scala.concurrent.duration.*

/**
 * How a take that found the [[TaskBuffer]] empty waits: the spinning taker's few looks, the park in the
 * queue of takers, and the wake chain a taker that waited passes on. The buffer's [[TaskBuffer.take]] builds
 * these waits once per take and runs the one its look at the state answered.
 *
 * Cancellation: a spinner cancelled during its looks leaves the spinners' count; a parked taker cancelled
 * gives up its place, and an element handed to it in that same instant goes back ([[UnsafeTaker]]). Both
 * waits are wrapped in the caller's `poll`, so call them inside `uncancelable`.
 */
private[internal] final class TakerWait[F[_], A](
    unsafe: UnsafeTaskBuffer[F, A],
    rechecks: FiberGroup[F]
)(using
    F: Async[F]
):

  private def modify[B](f: BufferState[F, A] => B): F[B] = F.delay(unsafe.modify(f))

  /*
   * The wake chain ([[BufferTakes.relay]]): a taker that waited and got an entry hands the next one to the
   * next parked taker before it runs its own.
   */
  private val relay: F[Unit] = modify(s => if s.relayDue then s.relay else F.unit).flatten

  private val relayed: Option[Entry[A]] => F[Option[Entry[A]]] =
    got => if got.isEmpty then F.pure(got) else relay.as(got)

  /*
   * The spinning takers. When the buffer is empty, a taker (at most `MaxSpinners`) does not park at once:
   * it yields its thread (`cede`) and looks again, a few times, before it parks. While it spins, producers
   * leave one element for it instead of waking a parked taker, so a producer that is only a little slower
   * than the workers hands each task over without a `Deferred`, a park and a wake-up per task. Elements
   * beyond the number of spinners still wake a parked taker at once, the first link of the wake chain
   * ([[BufferTakes.relay]]), and a spinner that gets one relays too; a spinner that finds nothing parks like
   * any taker.
   */
  // built once: a look is a cede and a read of the buffer without its lock ([[UnsafeTaskBuffer.mayTake]]); the
  // looks of one spin run inside one `poll` and one `onCancel`, and only a look that saw something takes the lock
  private val cedeAndLook: F[Boolean] = F.cede *> F.delay(unsafe.mayTake)
  private val leaveSpinning: F[Unit] = modify(s => rechecked(s, s.unspin)).flatten
  private val spinAgain: F[Answer[F, A]] = modify(s => rechecked(s, s.spinAgain))

  /*
   * The recheck ([[BufferState.recheck]]): a transition that may raise `hungry` (a taker parking, a spinner
   * leaving) arms it when takers start starving, and its caller starts it in a fiber of `rechecks`, which looks
   * at the inlet again after `Recheck` and wakes a parked taker if there is something to take. At most one is
   * under way per buffer; the buffer's close or stop cancels it. It hands no entry over: an entry in flight in
   * a fiber that is not a worker could miss the buffer's final collection.
   */
  private val recheck: F[Unit] = F.sleep(TakerWait.Recheck) *> modify(s => rechecked(s, s.recheck)).flatten
  private val recheckLater: F[Unit] = rechecks.start(recheck).void

  /** `next`, and then a recheck if the transition that built it armed one. Under the lock. */
  private def rechecked(s: BufferState[F, A], next: F[Unit]): F[Unit] =
    if s.armRecheck() then next *> recheckLater else next

  /** An answer whose wake-up is followed by a recheck if the transition that gave it armed one. Under the lock. */
  private def rechecked(s: BufferState[F, A], answer: Answer[F, A]): Answer[F, A] =
    if s.armRecheck() then (answer._1, answer._2 *> recheckLater) else answer

  /** Up to `left` looks: how many were left, the one that saw something included, or 0 if none did. */
  private def looks(left: Int): F[Int] =
    cedeAndLook.flatMap(seen =>
      if seen then F.pure(left) else if left == 1 then F.pure(0) else looks(left - 1)
    )

  /** The spinning taker's wait: its looks, then, if none saw an element, its park. */
  def spin(poll: Poll[F]): F[Option[Entry[A]]] = spin(poll, TakerWait.Spins)

  /** A plain taker's wait: parked until an element, a wake-up, the close or the stop. */
  def park(poll: Poll[F]): F[Option[Entry[A]]] = park(poll, spinner = false).flatMap(relayed)

  private def spin(poll: Poll[F], left: Int): F[Option[Entry[A]]] =
    if left == 0 then park(poll, spinner = true).flatMap(relayed)
    else
      poll(looks(left)).onCancel(leaveSpinning).flatMap { rest =>
        if rest == 0 then spin(poll, 0)
        else
          spinAgain.flatMap {
            case (entry: Entry[A], wake) => wake.as(Some(entry))
            case (Finished, _) => F.pure(None)
            case _ => spin(poll, rest - 1) // another taker got there first
          }
      }

  /*
   * Parks as a callback in the queue of takers. The look and the registration are one state change, made
   * when the callback exists (inside `async`), so no element can slip past between them. A taker cancelled
   * while parked gives up its place; an element handed to it in that same instant goes back (see `UnsafeTaker`).
   */
  private def park(poll: Poll[F], spinner: Boolean): F[Option[Entry[A]]] =
    leaveSpinning.whenA(spinner) *> poll(F.async[Option[Entry[A]]] { callback =>
      F.delay {
        val taker = new UnsafeTaker[A](callback, unsafe.giveBack)
        (taker, unsafe.modify(s => rechecked(s, s.takeOrWait(taker))))
      }.flatMap {
        case (_, (entry: Entry[A], wake)) => wake.map { _ => callback(Right(Some(entry))); None }
        case (_, (Finished, _)) => F.delay { callback(Right(None)); None }
        case (taker, (_, wake)) => wake.as(Some(abandonTake(taker))) // Wait: its wake-up is a recheck, if any
      }
    })

  /** A parked taker was cancelled: it leaves the queue, and what was handed to it meanwhile goes back. */
  private def abandonTake(taker: UnsafeTaker[A]): F[Unit] =
    F.delay {
      taker.abandon()
      unsafe.modify { s =>
        val at = s.takers.indexWhere(_ eq taker)
        if at >= 0 then s.takers.remove(at): Unit
      }
    }

private object TakerWait:

  /** How many times a spinning taker yields before it parks. */
  private val Spins = 16

  /**
   * How long after takers start starving the buffer looks at the inlet again: far longer than a store takes
   * to reach the other cores, and the most an element caught in that race waits for a taker.
   */
  private val Recheck = 20.micros
