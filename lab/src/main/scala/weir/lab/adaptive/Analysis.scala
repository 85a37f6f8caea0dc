package weir.lab.adaptive

import scala.concurrent.duration.*

/**
 * What the runs show against the targets: an adaptive limit, never told K, reaches at least 90% of
 * the best fixed limit's throughput with p99 latency at most twice the unloaded latency, and follows K when
 * it changes.
 *
 * *Settled* (per capacity phase): the first moment from which the limit stays within `[K, 2K]` for a
 * whole second (or to the end of the phase, if that is shorter) — in that band the upstream is fully
 * used and a request waits at most as long again as unloaded. Measured from the start of the phase.
 */
object Analysis:

  val throughputTarget = 0.90
  val latencyTarget = 2.0

  final case class Verdict(
      name: String,
      throughputRatio: Double,
      p99Ratio: Double,
      settled: Vector[Option[FiniteDuration]],
      settleTarget: FiniteDuration
  ):
    def throughputOk: Boolean = throughputRatio >= throughputTarget
    def latencyOk: Boolean = p99Ratio <= latencyTarget
    def followsOk: Boolean = settled.forall(_.exists(_ <= settleTarget))
    def ok: Boolean = throughputOk && latencyOk && followsOk

  def bestFixed(results: Vector[Trial.Result], fixed: Set[String]): Option[Trial.Result] =
    results.filter(r => fixed(r.name)).maxByOption(_.throughput)

  /** When the limit settled in each phase of `model` (see the object's comment). */
  def settled(r: Trial.Result, model: Upstream.Model): Vector[Option[FiniteDuration]] =
    model.phases(r.duration).map { (from, to, k) =>
      val points = r.series.filter(p => p.t >= from && p.t < to)
      def inBand(p: Trial.Point) = p.limit >= k && p.limit <= 2 * k
      points.indices.find { i =>
        val until = points(i).t + 1.second
        val stretch = points.drop(i).takeWhile(_.t <= until)
        stretch.forall(inBand) && (until <= to || stretch.size == points.size - i)
      }.map(i => points(i).t - from)
    }

  def verdict(
      r: Trial.Result,
      best: Trial.Result,
      model: Upstream.Model,
      settleTarget: FiniteDuration
  ): Verdict =
    Verdict(
      r.name,
      if best.throughput > 0 then r.throughput / best.throughput else 0.0,
      r.p99.toNanos.toDouble / model.base.toNanos,
      settled(r, model),
      settleTarget
    )
