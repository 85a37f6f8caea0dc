package weir

import scala.concurrent.duration.*

/**
 * How many tasks may run at once.
 *
 * A limit is a specification; each run of a pipeline turns it into its own controller, so one `Limit`
 * value can be shared between pipelines without coupling them. The limit of a running pipeline can be
 * changed at any time through [[Running.setLimit]]; adaptive limits ([[Limit.adaptive]], which tune
 * themselves from observed latency and failures) change it through the same path.
 *
 * Semantics of a change while running:
 *   - raising the limit lets waiting tasks start at once (new workers are started if tasks are
 *     buffered);
 *   - lowering it never interrupts a running task: no new task starts until fewer than the new limit
 *     are in flight, and surplus workers retire as they finish.
 */
sealed abstract class Limit:
  /** The limit a run starts with. */
  def initial: Int

  /**
   * What is wrong with this limit, each bad value named (empty when it is valid). A bad limit throws
   * nothing when it is built: the run that uses it fails to start with an [[InvalidSettings]] listing these.
   */
  def errors: List[String]

object Limit:

  /** At most `n` tasks in flight (`n` > 0, checked when a run starts). */
  def fixed(n: Int): Limit = Fixed(n)

  /**
   * No limit: every buffered task starts as soon as it is taken from the buffer. Defined as the general
   * fixed limit at `Int.MaxValue`; workers are started lazily, so this does not allocate a worker per
   * possible slot.
   */
  val unbounded: Limit = Fixed(Int.MaxValue)

  /**
   * A limit that tunes itself from the latency and the failures of the attempts it lets through, starting
   * at `initial` and staying within `[min, max]`.
   *
   * How it moves: every attempt (retries included) is a sample — its latency, and whether it was a
   * *drop*: an attempt that failed with an error for which `dropOn` holds (default: every error), or that
   * hit the pipeline's task timeout ([[TaskTimedOut]]). Samples are gathered in windows; a window closes
   * once it has `minSamples` samples and lasts at least `window`, and then `algorithm` computes the next
   * limit once (see [[AdaptiveAlgorithm.gradient]], the default, and [[AdaptiveAlgorithm.aimd]]). Only
   * attempts that *started* after the window opened count in it: each decision is judged on attempts that
   * ran under the previous one, so a window lasts at least one round trip however short `window` is.
   * Failures that are not drops count for neither latency nor drops; an attempt interrupted by a drain or a
   * release is no sample. With the default gradient, the limit grows by at most √limit per window and at
   * most halves per window (see [[AdaptiveAlgorithm.Gradient]] for where it settles).
   *
   * The limit applied is the estimate rounded down, within `[min, max]`; it changes through the same path
   * as [[Running.setLimit]] (raised at once, lowered without interrupting anything), and
   * [[Snapshot.limit]] shows it. Calling `setLimit` on an adaptive run overrides it until the next window
   * closes. Each run has its own controller: one `Limit` value can be shared between pipelines without
   * coupling them.
   *
   * Cost: two updates of one shared atomic reference per attempt, and a decision per window.
   *
   * Errors: never throws; a run that uses the limit fails to start with an [[InvalidSettings]] naming each
   * bad value when `min <= 0`, `max < min`, `initial` is outside `[min, max]`, `window <= 0`,
   * `minSamples <= 0` or the algorithm's own settings are bad (see [[Limit#errors]]).
   */
  def adaptive(
      initial: Int = 16,
      min: Int = 1,
      max: Int = 1000,
      algorithm: AdaptiveAlgorithm = AdaptiveAlgorithm.gradient(),
      window: FiniteDuration = 100.millis,
      minSamples: Int = 10,
      dropOn: Throwable => Boolean = _ => true
  ): Limit =
    Adaptive(initial, min, max, algorithm, window, minSamples, dropOn)

  private[weir] final case class Adaptive(
      initial: Int,
      min: Int,
      max: Int,
      algorithm: AdaptiveAlgorithm,
      window: FiniteDuration,
      minSamples: Int,
      dropOn: Throwable => Boolean
  ) extends Limit:
    def errors: List[String] =
      Validation.check(min > 0, s"adaptive limit: min must be > 0, was: $min") ++
        Validation.check(max >= min, s"adaptive limit: max must be >= min ($min), was: $max") ++
        Validation.check(
          initial >= min && initial <= max,
          s"adaptive limit: initial must be within [min, max] = [$min, $max], was: $initial"
        ) ++
        Validation.check(window > Duration.Zero, s"adaptive limit: window must be > 0, was: $window") ++
        Validation.check(minSamples > 0, s"adaptive limit: minSamples must be > 0, was: $minSamples") ++
        algorithm.errors.map(e => s"adaptive limit: $e")

    override def toString: String =
      s"Limit.adaptive(initial = $initial, min = $min, max = $max, $algorithm, window = $window, " +
        s"minSamples = $minSamples)"

  private[weir] final case class Fixed(initial: Int) extends Limit:
    def errors: List[String] = Validation.check(initial > 0, s"concurrency limit must be > 0, was: $initial")

    override def toString: String =
      if initial == Int.MaxValue then "Limit.unbounded" else s"Limit.fixed($initial)"
