package weir.internal

import cats.Applicative
import cats.effect.kernel.Deferred
import cats.syntax.all.*

import scala.collection.immutable.Queue as ScalaQueue

/**
 * The token bucket of a [[weir.RateLimiter]] as pure transitions of its [[BucketState.State]], for a bucket
 * of `burst` permits refilled every `interval`: each runs inside the limiter's `Ref.modify` and builds the
 * wake-ups it calls for as effects, running none.
 */
private[weir] final class BucketState[F[_]](burst: Int, interval: RateInterval)(using F: Applicative[F]):
  import BucketState.*

  /** Whole permits in the bucket at `t` ≥ anchor, before the cap. */
  def level(s: State[F], t: Long): Long = burst - s.taken + interval.earned(t - s.anchor)

  /** Applies the cap: with nobody waiting and the bucket full at `t`, restart the count from `t`. */
  def settle(s: State[F], t: Long): State[F] =
    if s.waiters.isEmpty && level(s, t) >= burst then s.copy(anchor = t, taken = 0L) else s

  def take(s: State[F], now: Long, n: Int): (State[F], Boolean) =
    val t = math.max(now, s.anchor)
    val settled = settle(s, t)
    if settled.waiters.isEmpty && level(settled, t) >= n then
      (settled.copy(taken = settled.taken + n), true)
    else (settled, false)

  def enqueue(s: State[F], now: Long, w: Waiter[F]): (State[F], Queued) =
    take(s, now, w.n) match
      case (s1, true) => (s1, Queued.Granted)
      case (s1, false) =>
        (
          s1.copy(waiters = s1.waiters.enqueue(w)),
          if s1.waiters.isEmpty then Queued.Head else Queued.Behind
        )

  /**
   * Run by the head `w`: grants, in order, every waiter covered at `now`. Returns the wake-ups to run
   * and how long `w` must sleep (0 when `w` was granted).
   */
  def release(s: State[F], now: Long, w: Waiter[F]): (State[F], (F[Unit], Long)) =
    val t = math.max(now, s.anchor)
    var left = level(s, t)
    var queue = s.waiters
    var taken = s.taken
    var wakes = F.unit
    var granted = false
    while queue.nonEmpty && queue.head.n <= left do
      val (h, rest) = queue.dequeue
      left -= h.n
      taken += h.n
      queue = rest
      if h eq w then granted = true else wakes = wakes *> h.gate.complete(Signal.Granted).void
    val s1 = s.copy(taken = taken, waiters = queue)
    if granted then
      // hand the timer to the new head, if any (it is not covered, or it would have been granted)
      (settle(s1, t), (wakes *> queue.headOption.fold(F.unit)(_.gate.complete(Signal.Arm).void), 0L))
    else
      // `w` is still the head (only the head runs this) and not covered: sleep until it is
      val due = interval.needed(taken + w.n - burst)
      (s1, (wakes, math.max(1L, due - (t - s.anchor))))

private[weir] object BucketState:

  /** What a waiter's gate tells it: its permits were granted, or it is now the head and must keep time. */
  enum Signal:
    case Granted, Arm

  final class Waiter[F[_]](val n: Int, val gate: Deferred[F, Signal])

  enum Queued:
    case Granted, Head, Behind

  /*
   * Invariants:
   *   - the bucket holds `burst + earned(t - anchor) - taken` permits at time t ≥ anchor (whole ones;
   *     `taken` counts permits granted since `anchor`), capped at `burst` while nobody waits — the cap is
   *     applied lazily by `settle`, which moves `anchor` to a time at which the bucket is full;
   *   - a waiter is queued only while the permits in the bucket do not cover the head's request;
   *   - the head of `waiters` keeps time for the queue: it has been sent `Signal.Arm` (or is the caller
   *     that just queued into an empty queue) and is the only fiber that sleeps;
   *   - nobody sleeps when `waiters` is empty.
   */
  final case class State[F[_]](anchor: Long, taken: Long, waiters: ScalaQueue[Waiter[F]])
