package weir

import scala.concurrent.duration.*

/**
 * How a failed attempt is retried: up to `maxAttempts` attempts in all, waiting
 * `min(maxDelay, base × factor^(n-1))` after the `n`-th failed attempt, spread by `jitter`, and only for
 * errors `retryable` accepts (by default every non-fatal error, timeouts included).
 *
 * A waiting retry holds its slot: the worker sleeps through the backoff, and the task counts as in flight,
 * so the limit bounds attempts and backoffs together and a retry never jumps the queue of waiting tasks.
 * When the attempts are exhausted, the last error goes to the pipeline's [[FailurePolicy]]; the outcome
 * records how many attempts were made.
 *
 * Backoff with "full jitter" (a uniformly random wait in `[0, delay]`) follows the analysis in the AWS
 * Architecture Blog post "Exponential Backoff And Jitter" (Marc Brooker, 2015).
 */
final case class Retry private (
    maxAttempts: Int,
    base: FiniteDuration,
    factor: Double,
    maxDelay: FiniteDuration,
    jitter: Retry.Jitter,
    retryable: Throwable => Boolean
):

  /**
   * What is wrong with this policy, each bad value named (empty when it is valid). A bad policy throws
   * nothing when it is built: the run that uses it fails to start with an [[InvalidSettings]] listing these.
   */
  def errors: List[String] =
    Validation.check(maxAttempts >= 1, s"maxAttempts must be >= 1, was: $maxAttempts") ++
      Validation.check(base >= Duration.Zero, s"retry base delay must be >= 0, was: $base") ++
      Validation.check(
        !factor.isNaN && !factor.isInfinite && factor >= 1.0,
        s"retry factor must be finite and >= 1, was: $factor"
      ) ++
      Validation.check(maxDelay >= base, s"maxDelay must be >= base ($base), was: $maxDelay")

  /** Retries only errors for which `p` holds. */
  def retryOn(p: Throwable => Boolean): Retry = copy(retryable = p)

  /** The wait after the `failed`-th failed attempt, before jitter. */
  def delayAfter(failed: Int): FiniteDuration =
    val nanos = base.toNanos.toDouble * math.pow(factor, (failed - 1).toDouble)
    if nanos >= maxDelay.toNanos.toDouble then maxDelay else nanos.toLong.nanos

  /** The wait after the `failed`-th failed attempt, spread by [[jitter]] with `random`. */
  def backoff(failed: Int, random: java.util.random.RandomGenerator): FiniteDuration =
    val delay = delayAfter(failed)
    jitter match
      case Retry.Jitter.Off => delay
      case Retry.Jitter.Full => random.nextLong(delay.toNanos + 1).nanos
      case Retry.Jitter.Equal => (delay.toNanos / 2 + random.nextLong(delay.toNanos / 2 + 1)).nanos

  override def toString: String =
    if maxAttempts == 1 then "Retry.none"
    else s"Retry.exponential($base, maxAttempts=$maxAttempts, factor=$factor, maxDelay=$maxDelay, $jitter)"

object Retry:

  /** How a backoff delay is spread. */
  enum Jitter:
    /** Wait exactly the computed delay. */
    case Off

    /** Wait a uniformly random time in `[0, delay]`. */
    case Full

    /** Wait `delay / 2` plus a uniformly random time in `[0, delay / 2]`. */
    case Equal

  /** One attempt, no retry (the default). */
  val none: Retry = Retry(1, Duration.Zero, 1.0, Duration.Zero, Jitter.Off, _ => false)

  /**
   * Exponential backoff: `maxAttempts` attempts in all (≥ 1), the first retry after `base` (≥ 0), each next
   * one `factor` (≥ 1, finite) times longer, never longer than `maxDelay`. Non-fatal errors are retried.
   *
   * Errors: never throws; bad values ([[Retry#errors]]) fail the run that uses the policy with an
   * [[InvalidSettings]] naming each of them.
   */
  def exponential(
      base: FiniteDuration,
      maxAttempts: Int,
      factor: Double = 2.0,
      maxDelay: FiniteDuration = 30.seconds,
      jitter: Jitter = Jitter.Full
  ): Retry =
    Retry(maxAttempts, base, factor, maxDelay, jitter, scala.util.control.NonFatal(_))
