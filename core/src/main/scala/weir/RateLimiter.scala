package weir

import cats.effect.kernel.{Poll, Ref, Temporal}
import cats.effect.syntax.all.*
import cats.syntax.all.*

import weir.internal.{BucketState, RateInterval}
import weir.internal.BucketState.{Queued, Signal, State, Waiter}

import java.math.BigInteger
import scala.collection.immutable.Queue as ScalaQueue
import scala.concurrent.duration.*

/**
 * A token bucket: at most `burst` permits at once, refilled at a fixed rate. Over any interval of
 * length `t` (from a full bucket) it grants at most `burst + rate × t` permits, and when callers keep
 * asking it grants exactly that many, whatever the length of the run (the refill is exact arithmetic
 * on the clock, see below).
 *
 * One limiter can be shared by any number of fibers and pipelines: they draw on the same bucket, so
 * the rate is the total of all of them, not a rate per caller.
 *
 * How it works (ADR 0006): the bucket is never refilled by a background fiber. Its level is computed
 * from `Temporal[F].monotonic` whenever someone asks: `level = burst + ⌊elapsed × rate⌋ − taken`,
 * capped at `burst`, with the rate held as an exact fraction (nanoseconds per permit), so nothing
 * drifts however long it runs. Callers that must wait join one queue; only the caller at its head
 * sleeps, until the time its permits are due, and when it wakes it grants, in order, every waiter whose
 * permits are then covered. However many fibers wait, the limiter arms at most one timer at a time.
 *
 * Methods that take `n` ask for `n` permits at once (0 ≤ n ≤ burst).
 *
 * ==What blocks==
 * `acquire`/`acquireN` semantically block (no thread is held) until the permits are granted. The
 * other methods never wait.
 *
 * ==Fairness==
 * First come, first served: permits are granted in the order callers started to wait, and a caller
 * that finds others waiting queues behind them even if the bucket holds enough permits for it (a small
 * request never overtakes a large one). `tryAcquire` never overtakes a waiter either: it fails while
 * anyone waits.
 *
 * ==Cancellation==
 * Cancelling a waiting `acquire` removes it from the queue; the permits it was waiting for go to the
 * waiters behind it, on time. If it was the waiter sleeping for the queue, the next waiter takes over
 * the timer at once. Once its permits have been granted, an `acquire` completes (Cats Effect `IO`
 * observes a cancellation that arrives after that only when `acquire` has returned); an effect type
 * that would still cancel it puts them back into the bucket (never above `burst`), where the head of
 * the queue finds them when it next wakes. No permit is lost and none is counted twice.
 *
 * ==Errors==
 * The constructors throw nothing: their effect fails with an [[InvalidSettings]] naming every bad value (a
 * rate that is not finite and > 0, a burst below 1). `acquireN`/`tryAcquireN` fail with `IllegalArgumentException` for `n < 0` or `n > burst`
 * (such a request could never be granted). Nothing else fails.
 *
 * ==Concurrent callers==
 * Every method may be called from any number of fibers at once.
 */
sealed abstract class RateLimiter[F[_]]:

  /** The most permits the bucket holds (and so the most granted at once after an idle period). */
  def burst: Int

  /** The refill rate, in permits per second. */
  def permitsPerSecond: Double

  /** Waits for one permit. See the class documentation for blocking, fairness and cancellation. */
  def acquire: F[Unit] = acquireN(1)

  /** Waits for `n` permits (0 ≤ n ≤ burst), granted together. */
  def acquireN(n: Int): F[Unit]

  /** [[acquire]], telling whether it had to wait (the engine counts those in [[Snapshot.rateLimited]]). */
  private[weir] def acquireWaiting: F[Boolean]

  /** Takes one permit if one is available now and nobody is waiting; never waits. */
  def tryAcquire: F[Boolean] = tryAcquireN(1)

  /** Takes `n` permits (0 ≤ n ≤ burst) if they are available now and nobody is waiting; never waits. */
  def tryAcquireN(n: Int): F[Boolean]

  /** Whole permits in the bucket now (0 to `burst`). While callers wait, these are theirs. */
  def available: F[Long]

  /** Callers waiting for permits now. */
  def waiting: F[Int]

object RateLimiter:

  /**
   * A token bucket refilled at `permitsPerSecond` (finite, > 0; fractions allowed: 0.5 is one permit
   * every two seconds) holding at most `burst` (≥ 1) permits. It starts full.
   *
   * The rate is taken as the shortest decimal that prints as this `Double` (50000.0 is exactly 50,000
   * per second, 0.1 exactly one per ten seconds), and refills from it exactly.
   */
  def tokenBucket[F[_]](permitsPerSecond: Double, burst: Int)(using F: Temporal[F]): F[RateLimiter[F]] =
    val rateOk = !permitsPerSecond.isNaN && !permitsPerSecond.isInfinite && permitsPerSecond > 0
    Validation.raise(
      "RateLimiter",
      Validation.check(rateOk, s"rate must be finite and > 0 permits per second, was: $permitsPerSecond") ++
        burstErrors(burst)
    ).flatMap { _ =>
      val decimal = java.math.BigDecimal.valueOf(permitsPerSecond)
      // permitsPerSecond = unscaled × 10^-scale, so one permit takes 1e9 × 10^scale / unscaled nanoseconds
      val (nanos, permits) =
        if decimal.scale >= 0 then
          (RateInterval.NanosPerSecond.multiply(BigInteger.TEN.pow(decimal.scale)), decimal.unscaledValue)
        else (RateInterval.NanosPerSecond, decimal.unscaledValue.multiply(BigInteger.TEN.pow(-decimal.scale)))
      make(RateInterval(nanos, permits), burst)
    }

  /**
   * A token bucket refilled with `permits` permits every `per` (both > 0), exactly (for rates such as
   * 1,000 per 3 seconds that no `Double` holds), holding at most `burst` (≥ 1) permits. It starts full.
   */
  def tokenBucket[F[_]](permits: Long, per: FiniteDuration, burst: Int)(using
      F: Temporal[F]
  ): F[RateLimiter[F]] =
    Validation.raise(
      "RateLimiter",
      Validation.check(permits > 0, s"permits per period must be > 0, was: $permits") ++
        Validation.check(per > Duration.Zero, s"rate period must be > 0, was: $per") ++
        burstErrors(burst)
    ).flatMap(_ =>
      make(RateInterval(BigInteger.valueOf(per.toNanos), BigInteger.valueOf(permits)), burst)
    )

  private def burstErrors(burst: Int): List[String] =
    Validation.check(burst >= 1, s"burst must be >= 1, was: $burst")

  private def make[F[_]](interval: RateInterval, burst: Int)(using F: Temporal[F]): F[RateLimiter[F]] =
    F.monotonic.flatMap { now =>
      F.ref(State[F](now.toNanos, 0L, ScalaQueue.empty)).map(new TokenBucket(burst, interval, _))
    }

  private final class TokenBucket[F[_]](val burst: Int, interval: RateInterval, state: Ref[F, State[F]])(using
      F: Temporal[F]
  ) extends RateLimiter[F]:
    private val rules = new BucketState[F](burst, interval)
    import rules.{enqueue, level, release, take}

    def permitsPerSecond: Double = interval.permitsPerSecond

    def acquireN(n: Int): F[Unit] = acquiring(n).void

    def acquireWaiting: F[Boolean] = acquiring(1)

    /** Waits for `n` permits; true when they were not granted at once. */
    private def acquiring(n: Int): F[Boolean] =
      if n == 0 then F.pure(false)
      else
        checked(n) *> F.uncancelable { poll =>
          F.monotonic.flatMap { now =>
            state.modify(take(_, now.toNanos, n)).flatMap { granted =>
              if granted then F.pure(false)
              else
                F.deferred[Signal].flatMap { gate =>
                  val w = Waiter(n, gate)
                  state.modify(enqueue(_, now.toNanos, w)).flatMap {
                    case Queued.Granted => F.pure(false)
                    case Queued.Head => keepTime(poll, w).as(true)
                    case Queued.Behind =>
                      poll(gate.get).onCancel(leave(w)).flatMap {
                        case Signal.Granted => F.pure(true)
                        case Signal.Arm => keepTime(poll, w).as(true)
                      }
                  }
                }
            }
          }
        }

    def tryAcquireN(n: Int): F[Boolean] =
      if n == 0 then F.pure(true)
      else checked(n) *> F.monotonic.flatMap(now => state.modify(take(_, now.toNanos, n)))

    def available: F[Long] =
      (state.get, F.monotonic).mapN { (s, now) =>
        math.max(0L, math.min(burst.toLong, level(s, math.max(now.toNanos, s.anchor))))
      }

    def waiting: F[Int] = state.get.map(_.waiters.size)

    override def toString: String = s"RateLimiter.tokenBucket($permitsPerSecond/s, burst = $burst)"

    private def checked(n: Int): F[Unit] =
      if n < 0 then F.raiseError(new IllegalArgumentException(s"permits requested must be >= 0, was: $n"))
      else if n > burst then
        F.raiseError(
          new IllegalArgumentException(s"permits requested must be <= burst ($burst), was: $n")
        )
      else F.unit

    /**
     * The head's loop: grant what is covered now; if that did not include this waiter, sleep until its
     * permits are due and look again. One sleep for the whole queue.
     */
    private def keepTime(poll: Poll[F], w: Waiter[F]): F[Unit] =
      F.monotonic.flatMap { now =>
        state.modify(release(_, now.toNanos, w)).flatMap { (wakes, sleep) =>
          wakes *> {
            if sleep == 0L then F.unit
            else poll(F.sleep(sleep.nanos)).onCancel(leave(w)) *> keepTime(poll, w)
          }
        }
      }

    /** A waiter cancelled: out of the queue (handing the timer on), or its permits back if granted. */
    private def leave(w: Waiter[F]): F[Unit] =
      state.modify { s =>
        if s.waiters.headOption.exists(_ eq w) then
          val rest = s.waiters.tail
          (s.copy(waiters = rest), rest.headOption.fold(F.unit)(_.gate.complete(Signal.Arm).void))
        else if s.waiters.exists(_ eq w) then (s.copy(waiters = s.waiters.filterNot(_ eq w)), F.unit)
        else (s.copy(taken = s.taken - w.n), F.unit) // granted, then cancelled: the permits go back
      }.flatten
