package weir.internal

import fs2.Chunk
import weir.internal.BufferState.Appended

import java.util.concurrent.atomic.AtomicReference
import scala.annotation.tailrec

/**
 * The lock-free core of the [[TaskBuffer]]: its [[BufferState]] in an `AtomicReference`, changed only by
 * compare-and-set, with the plain calls the engine's hot paths make. [[TaskBuffer]] is the effectful
 * shell around it (waiting, waking, cancellation); each plain call here either completes an operation
 * that needs no wait and no effect, or changes nothing and says so, and the caller then uses the shell.
 *
 * ==Protocol==
 * | call                | completes when                                        | otherwise (nothing changed) |
 * |---------------------|-------------------------------------------------------|-----------------------------|
 * | [[tryOffer]]        | the whole chunk fits and the buffer is not stopped     | [[NoRoom]]: `TaskBuffer.offer` |
 * | [[tryTake]]         | a claimable entry is queued and taking it wakes no producer | [[TakeLater]]: `TaskBuffer.take` |
 * | [[tryFinishKey]]    | handing the key on wakes no producer (a take with it: as [[tryTake]]) | [[KeyTurnLater]]: `TaskBuffer.finishKey` |
 *
 * These are plain calls with effects on shared state: call them inside an effect (an `F.delay`, or a
 * continuation that runs once), never while building one that may be run twice.
 */
private[weir] final class UnsafeTaskBuffer[F[_], A](initial: BufferState[F, A]):
  import UnsafeTaskBuffer.*

  private val ref = new AtomicReference[BufferState[F, A]](initial)
  private val noRoom = Appended[A](Nil, 0, 0, refused = true)

  /** The current state. */
  def state: BufferState[F, A] = ref.get()

  /**
   * Applies the transition `f` atomically and returns its result. `f` may run more than once under
   * contention, like `Ref.modify`'s: it must be pure, and the caller runs what it describes.
   */
  @tailrec def modify[B](f: BufferState[F, A] => (BufferState[F, A], B)): B =
    val seen = ref.get()
    val (next, result) = f(seen)
    if ref.compareAndSet(seen, next) then result else modify(f)

  /** Whether the buffer keeps [[EnqueueTimes]]: its offers need the time they are made. */
  val measured: Boolean = initial.times ne EnqueueTimes.Off

  /**
   * Appends all of `chunk` if it all fits, handing entries to waiting takers on the way, and returns how
   * many of its elements no taker received (the demand for more workers); or returns [[NoRoom]] (negative)
   * when the chunk does not all fit, another producer is ahead (waiting for room, or woken and not yet
   * appended: it comes first) or the buffer is stopped. `now`: see [[BufferState.append]].
   */
  def tryOffer(chunk: Chunk[A], now: Long): Int =
    val appended =
      modify(s =>
        if s.stopped || chunk.size > s.free || s.offerers.ahead then (s, noRoom)
        else s.append(chunk, None, now, resumed = false)
      )
    if appended.refused then NoRoom
    else
      Taker.handOver(appended.served)
      appended.unserved

  /** Takes the oldest claimable entry if that needs no wait and wakes no producer; else [[TakeLater]]. */
  @tailrec def tryTake(): Took[A] =
    val seen = ref.get()
    val next = seen.takeFromHead
    if next eq seen then modify(_.takeIfFree)
    else if ref.compareAndSet(seen, next) then
      if measured then seen.times.entry(seen.headSeq + seen.pos, seen.head(seen.pos), null)
      else Entry(seen.headSeq + seen.pos, seen.head(seen.pos), null) // see `Worker.measured`
    else tryTake()

  /**
   * The claimant of `key` is done with an entry: the next entry parked behind the key (still claimed);
   * with `andTake`, once the key is released, the oldest claimable entry, taken in the same step if that
   * wakes no producer (its key claimed for the caller, as [[tryTake]]'s); [[KeyReleased]] (nothing handed
   * on or taken); or [[KeyTurnLater]] when the place a hand-on frees must wake a producer.
   */
  @tailrec def tryFinishKey(key: Any, andTake: Boolean): KeyTurn[A] =
    val seen = ref.get()
    val (next, turn) = seen.finishKeyQuietly(key, andTake)
    if (next eq seen) || ref.compareAndSet(seen, next) then turn else tryFinishKey(key, andTake)

  /** Puts back an entry a cancelled taker never received, serving it again at once if someone waits. */
  val giveBack: Entry[A] => Unit = entry => Taker.handOver(modify(_.putBack(entry)))

private[weir] object UnsafeTaskBuffer:
  /** [[UnsafeTaskBuffer.tryOffer]]: nothing was appended; offer with `TaskBuffer.offer`. */
  val NoRoom: Int = -1
