package weir

import scala.concurrent.duration.*

/**
 * How a [[Limit.adaptive]] limit moves. The limit is re-estimated once per *window* of samples (an
 * attempt's latency and whether it was dropped); see [[Limit.adaptive]] for what a window is and what
 * counts as a drop. Two families:
 *
 *   - [[AdaptiveAlgorithm.gradient]] (the default) watches latency: it compares each window's least latency
 *     with the latency seen without load and shrinks the limit in proportion when they diverge.
 *   - [[AdaptiveAlgorithm.aimd]] watches drops (errors and timeouts) and, optionally, a latency threshold:
 *     additive increase, multiplicative decrease.
 */
sealed trait AdaptiveAlgorithm:
  /** What is wrong with these settings, each bad value named (empty when they are valid). */
  def errors: List[String]

  /** The next estimate of the limit (before clamping to `[min, max]`) after a window. */
  private[weir] def next(limit: Double, window: AdaptiveAlgorithm.Window): Double

object AdaptiveAlgorithm:

  /**
   * What one window saw. `meanRtt` and `minRtt` (nanoseconds) cover the attempts that succeeded (`measured`
   * of them); both are 0 when there were none. `baseline` is the no-load latency
   * estimate after this window (the least latency seen, see [[Gradient]]). `maxInFlight` is the most
   * attempts in flight at once during the window.
   */
  private[weir] final case class Window(
      measured: Int,
      drops: Int,
      meanRtt: Long,
      minRtt: Long,
      baseline: Long,
      maxInFlight: Int
  ):
    /** The limit was not in use: fewer than half of its slots were ever busy, so latency says nothing. */
    def appLimited(limit: Double): Boolean = maxInFlight * 2.0 < limit

  /**
   * A latency gradient against the no-load latency, after the `GradientLimit` of Netflix's
   * concurrency-limits library (Eran Landau et al.), with its queue allowance of √limit; the periodic
   * re-measurement of the no-load latency follows the ProbeRTT phase of TCP BBR (Cardwell et al., "BBR:
   * Congestion-Based Congestion Control", ACM Queue 2016).
   *
   * After each window: `gradient = clamp(tolerance × baseline / minRtt, 0.5, 1)`, where `minRtt` is the
   * window's least latency, and the new limit is `limit × gradient + √limit`. Without queueing (even the
   * window's fastest attempt no slower than `tolerance` × the baseline) the limit grows by √limit per
   * window; when latency rises the limit shrinks in proportion, at most halving per window. The window's
   * *least* latency, not its mean, is compared (as TCP BBR and Vegas watch the minimum round trip): a queue
   * delays every attempt, the fastest one included, while a mix of slow and fast tasks or a pause of the
   * client's own threads inflates the mean without any queue upstream (on a busy 2-core machine a
   * mean-based gradient held the limit near 10 where 50 was right). It settles where the queue it builds is about √limit deep: for an upstream that serves `K` at
   * once and queues the rest, at `K + √limit` (`K = 50` → 57.6; latency 1.15 × the no-load latency).
   * A window with a drop also caps the new limit at `limit × backoff`. A window that used fewer than half
   * the slots never grows the limit (the application, not the upstream, was the bottleneck).
   *
   * The baseline is the least latency of any window. An upstream that gets slower for good would otherwise
   * look overloaded forever, so when the baseline has not been seen again for `probeInterval`, the next
   * window is a probe: the limit is halved for that window, its least latency becomes the new baseline, and
   * the limit returns to where it was. A probe costs about one window at half the limit per interval.
   *
   * @param tolerance     how much the window's least latency may exceed the baseline before the limit shrinks (≥ 1)
   * @param backoff       the factor applied to the limit after a window with a drop, in (0, 1)
   * @param probeInterval how long the baseline may go unconfirmed before a probe (`None`: never probe)
   */
  final case class Gradient private[AdaptiveAlgorithm] (
      tolerance: Double,
      backoff: Double,
      probeInterval: Option[FiniteDuration]
  ) extends AdaptiveAlgorithm:
    def errors: List[String] =
      Validation.check(
        tolerance >= 1.0 && !tolerance.isInfinite,
        s"gradient tolerance must be >= 1, was: $tolerance"
      ) ++ backoffErrors(backoff) ++
        probeInterval.toList.flatMap(p =>
          Validation.check(p > Duration.Zero, s"probe interval must be > 0, was: $p")
        )

    private[weir] def next(limit: Double, w: Window): Double =
      if w.measured == 0 then limit * backoff
      else
        val gradient = math.max(0.5, math.min(1.0, tolerance * w.baseline.toDouble / w.minRtt.toDouble))
        val moved = limit * gradient + math.sqrt(limit)
        val used = if w.appLimited(limit) then math.min(moved, limit) else moved
        if w.drops > 0 then math.min(used, limit * backoff) else used

  /**
   * Additive increase, multiplicative decrease, after the `AIMDLimit` of Netflix's concurrency-limits (and
   * TCP Reno's congestion window, RFC 5681). After each window: a drop (or, with `latencyThreshold`, a mean
   * latency above it) multiplies the limit by `backoff`; otherwise the limit grows by `increase` if at least
   * half of it was in use. Without a latency threshold it only learns from drops, so it climbs until the
   * upstream fails or times out and oscillates below that point.
   *
   * @param increase         added to the limit after a clean window (> 0)
   * @param backoff          the factor applied after a window with a drop, in (0, 1)
   * @param latencyThreshold a window whose mean latency exceeds this counts as a drop
   */
  final case class Aimd private[AdaptiveAlgorithm] (
      increase: Double,
      backoff: Double,
      latencyThreshold: Option[FiniteDuration]
  ) extends AdaptiveAlgorithm:
    def errors: List[String] =
      Validation.check(increase > 0 && !increase.isInfinite, s"AIMD increase must be > 0, was: $increase") ++
        backoffErrors(backoff) ++
        latencyThreshold.toList.flatMap(t =>
          Validation.check(t > Duration.Zero, s"latency threshold must be > 0, was: $t")
        )

    private[weir] def next(limit: Double, w: Window): Double =
      val slow = w.measured > 0 && latencyThreshold.exists(t => w.meanRtt > t.toNanos)
      if w.drops > 0 || slow then limit * backoff
      else if w.appLimited(limit) then limit
      else limit + increase

  /**
   * The latency-gradient algorithm (see [[Gradient]]). Never throws: a limit with bad settings (`tolerance`
   * below 1 or not a number, `backoff` outside (0, 1), a `probeInterval` that is not positive) fails the run
   * that uses it with an [[InvalidSettings]] naming each value.
   */
  def gradient(
      tolerance: Double = 1.0,
      backoff: Double = 0.9,
      probeInterval: Option[FiniteDuration] = Some(10.seconds)
  ): AdaptiveAlgorithm =
    Gradient(tolerance, backoff, probeInterval)

  /**
   * Additive increase, multiplicative decrease (see [[Aimd]]). Never throws: a limit with bad settings
   * (`increase` not positive, `backoff` outside (0, 1), a `latencyThreshold` that is not positive) fails the
   * run that uses it with an [[InvalidSettings]] naming each value.
   */
  def aimd(
      increase: Double = 1.0,
      backoff: Double = 0.9,
      latencyThreshold: Option[FiniteDuration] = None
  ): AdaptiveAlgorithm =
    Aimd(increase, backoff, latencyThreshold)

  private def backoffErrors(backoff: Double): List[String] =
    Validation.check(backoff > 0 && backoff < 1, s"backoff must be in (0, 1), was: $backoff")
