package weir.internal

import cats.effect.kernel.{Async, Deferred, Poll}
import cats.effect.syntax.all.*
import cats.syntax.all.*

import scala.collection.immutable.SortedMap

/**
 * The reorder window of [[weir.TaskOrder.inputOrder]]: a task at input position `p` may start only when
 * `p < prefix + window`, where `prefix` is the position of the oldest task not yet finished. This bounds
 * the outcomes a consumer must hold back to emit in order to `window`.
 *
 * ==Representation==
 * A ring of `window` flags, the flag of position `p` at `p % window`: the positions that can be finished
 * and not yet slid over all lie in `[prefix, prefix + window)` (a task is admitted only below
 * `prefix + window`), so they never share a slot. Marking a position is one flag write, and sliding the
 * prefix clears the flags it passes: O(1) per task, no allocation while nothing waits. The rare
 * position finished without having been admitted (a task handed back as not started while the run
 * stops) may lie beyond the ring; it goes to `beyond`, a set the slide also consults. Waiters (tasks
 * whose position is not admitted yet) are kept by position in a sorted map, touched only when someone
 * waits.
 *
 * The flags, the prefix and the waiters change together under this object's lock, held for a few
 * array accesses and never across an effect: completing the waiters' `Deferred`s happens after it is
 * released. `prefix` is also volatile, so the common admission (well inside the window) is a plain read.
 */
private[weir] final class OrderWindow[F[_]] private (window: Int)(using F: Async[F]):

  // Invariant (under the lock): every position < prefix is finished; for p in [prefix, prefix + window),
  // done(p % window) says whether p is finished; `beyond` holds the finished positions >= prefix + window
  // at the time they finished; waiters(p) are the admissions of position p still waiting.
  private val done = new Array[Boolean](window)
  @volatile private var prefix = 0L
  private var beyond = Set.empty[Long]
  private var waiters = SortedMap.empty[Long, List[Deferred[F, Unit]]]

  /** Waits until position `seq` may start. Only the wait is cancelable (through `poll`). */
  def admit(poll: Poll[F], seq: Long): F[Unit] =
    F.delay(admitted(seq)).flatMap { admitted =>
      if admitted then F.unit
      else
        F.deferred[Unit].flatMap { d =>
          F.delay(enqueue(seq, d)).flatMap(waits =>
            if waits then poll(d.get).onCancel(forget(seq, d)) else F.unit
          )
        }
    }

  /** Whether position `seq` may start now: a plain read, to be made inside an effect. */
  def admitted(seq: Long): Boolean = seq < prefix + window

  /**
   * Marks position `seq` finished (once per position) and slides the window; returns what wakes the
   * admissions the slide let in, or `None` when none waits (the common case, which allocates nothing). A
   * plain call, to be made inside an effect that runs what it returns.
   */
  def finished(seq: Long): Option[F[Unit]] =
    val woken = mark(seq)
    if woken.isEmpty then None else Some(woken.traverse_(_.complete(()).void))

  /** The oldest position not finished yet. */
  def oldestUnfinished: F[Long] = F.delay(prefix)

  /** How many admissions wait now. */
  def waiting: F[Int] = F.delay(synchronized(waiters.valuesIterator.map(_.size).sum))

  private def enqueue(seq: Long, d: Deferred[F, Unit]): Boolean = synchronized {
    if seq < prefix + window then false
    else
      waiters = waiters.updated(seq, d :: waiters.getOrElse(seq, Nil))
      true
  }

  private def forget(seq: Long, d: Deferred[F, Unit]): F[Unit] =
    F.delay(synchronized {
      val rest = waiters.getOrElse(seq, Nil).filterNot(_ eq d)
      waiters = if rest.isEmpty then waiters - seq else waiters.updated(seq, rest)
    })

  private def mark(seq: Long): List[Deferred[F, Unit]] = synchronized {
    var p = prefix
    if seq < p then () // already slid over (each position finishes once: defensive)
    else if seq == p && beyond.isEmpty then p += 1 // the common case: the oldest task finished
    else if seq < p + window then done((seq % window).toInt) = true
    else beyond += seq
    // slide over the finished positions that follow
    var more = true
    while more do
      val slot = (p % window).toInt
      if done(slot) then
        done(slot) = false
        p += 1
      else if beyond.nonEmpty && beyond.contains(p) then
        beyond -= p
        p += 1
      else more = false
    prefix = p
    if waiters.isEmpty || waiters.firstKey >= p + window then Nil
    else
      val (admitted, waiting) = waiters.span((q, _) => q < p + window)
      waiters = waiting
      admitted.valuesIterator.flatten.toList
  }

private[weir] object OrderWindow:

  def apply[F[_]](window: Int)(using F: Async[F]): F[OrderWindow[F]] = F.delay(unsafe(window))

  /** [[apply]] as a plain call, for building a run's parts in one effect. */
  def unsafe[F[_]](window: Int)(using F: Async[F]): OrderWindow[F] =
    if window <= 0 then throw new IllegalArgumentException(s"reorder window must be > 0, was: $window")
    new OrderWindow[F](window)
