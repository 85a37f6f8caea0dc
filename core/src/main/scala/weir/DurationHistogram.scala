package weir

import weir.internal.LogHistogram

import scala.concurrent.duration.*

/**
 * The latencies of a run's tasks (each from its start to the end of its handler, as in [[Latency]]) as a
 * histogram, from [[Running.latencies]]: cumulative from the start of the run, with a relative precision
 * under 0.1%. Immutable: a copy taken when it was read.
 *
 * It is what a metrics exporter needs to publish the latencies as an explicit-bucket histogram without
 * recording every task a second time ([[bucketCounts]] for any bounds).
 */
final class DurationHistogram private[weir] (histogram: LogHistogram):

  /** How many latencies were recorded. */
  def count: Long = histogram.count

  /** Their sum. */
  def sum: FiniteDuration = histogram.sumOfValues.nanos

  /** The largest (zero when none). */
  def max: FiniteDuration = histogram.max.nanos

  /** Count, mean, percentiles and maximum, as in [[Summary.latency]]. */
  def latency: Latency = histogram.latency

  /**
   * How many latencies fall in each bucket bounded by `bounds`, ascending inclusive upper bounds (as in
   * OpenTelemetry's explicit-bucket histograms): `bounds.size + 1` counts, the last for the latencies above
   * every bound, summing to [[count]]. A latency above a bound by less than the precision (under 0.1% of
   * the bound) may be counted below it. An operation, checked at once: throws `IllegalArgumentException`
   * when the bounds are not strictly ascending or one is negative ([[DurationHistogram.boundsErrors]]
   * tells beforehand).
   */
  def bucketCounts(bounds: Seq[FiniteDuration]): Vector[Long] =
    DurationHistogram.boundsErrors(bounds).headOption.foreach(e => throw new IllegalArgumentException(e))
    histogram.countsUpTo(bounds.iterator.map(_.toNanos).toArray).toVector

  override def toString: String = s"DurationHistogram($latency)"

object DurationHistogram:

  /**
   * What is wrong with bucket bounds for [[DurationHistogram.bucketCounts]] (they must be >= 0 and strictly
   * ascending), naming them; empty when they are good. For settings that hold bounds, checked where used.
   */
  def boundsErrors(bounds: Seq[FiniteDuration]): List[String] =
    val ok = bounds.headOption.forall(_ >= Duration.Zero) && bounds.lazyZip(bounds.drop(1)).forall(_ < _)
    Validation.check(ok, s"bucket bounds must be >= 0 and strictly ascending, were: ${bounds.mkString(", ")}")
