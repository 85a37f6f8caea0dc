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
 * | [[tryTake]]         | a claimable entry is queued and taking it wakes no producer | [[Later]]: `TaskBuffer.take` |
 * | [[tryFinishKey]]    | handing the key on wakes no producer (a take with it: as [[tryTake]]) | [[Later]]: `TaskBuffer.finishKey` |
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

  /**
   * Takes the oldest claimable entry ([[BufferState.take]]) if that needs no wait and wakes no producer;
   * else [[Later]], and nothing changed.
   */
  @tailrec def tryTake(): Handout[A] =
    val seen = ref.get()
    val next = headTaken(seen)
    if next eq seen then
      modify[Handout[A]](s =>
        if s.size == 0 then (s, Later)
        else
          s.take match
            case taken @ (after, _: Entry[A]) if !after.offererDue => taken
            case _ => (s, Later)
      )
    else if ref.compareAndSet(seen, next) then
      if measured then seen.times.entry(seen.headSeq + seen.pos, seen.head(seen.pos), NoKey)
      else Entry(seen.headSeq + seen.pos, seen.head(seen.pos), NoKey) // see `TaskPath.measured`
    else tryTake()

  /**
   * [[tryTake]]'s commonest case with nothing allocated but the next state: no key function, nothing put
   * back, the oldest entry in the head chunk, and no producer to wake by taking it. The task taken is
   * `head(pos)` of `s`. Returns `s` itself when the case does not apply.
   */
  private def headTaken(s: BufferState[F, A]): BufferState[F, A] =
    if s.stopped || s.keyOf.isDefined || s.front.nonEmpty || s.pos >= s.head.size then s
    else
      val next = s.copy(pos = s.pos + 1, size = s.size - 1)
      if next.offererDue then s else next

  /**
   * The claimant of `key` is done with an entry ([[BufferState.finishKey]]): the next entry parked behind
   * the key (still claimed); with `andTake`, once the key is released, the oldest claimable entry, taken in
   * the same step if that wakes no producer (its key claimed for the caller, as [[tryTake]]'s); [[Released]]
   * (nothing handed on or taken); or [[Later]], and nothing changed, when the place a hand-on frees must wake
   * a producer.
   */
  @tailrec def tryFinishKey(key: Any, andTake: Boolean): Handout[A] =
    val seen = ref.get()
    val (next, answer) = seen.finishKey(key, andTake)
    // an entry taken after the release woke no producer (`finishKey` made sure); one handed on may have to
    val wakes = answer match
      case _: Entry[A] => next.offererDue
      case _ => false
    if wakes then Later
    else if (next eq seen) || ref.compareAndSet(seen, next) then answer
    else tryFinishKey(key, andTake)

  /** Puts back an entry a cancelled taker never received, serving it again at once if someone waits. */
  val giveBack: Entry[A] => Unit = entry => Taker.handOver(modify(_.putBack(entry)))

private[weir] object UnsafeTaskBuffer:
  /** [[UnsafeTaskBuffer.tryOffer]]: nothing was appended; offer with `TaskBuffer.offer`. */
  val NoRoom: Int = -1
