package weir.lab.compare.report

import weir.lab.Stats
import weir.lab.compare.{Measurement, Status}

/** The runs of one approach on one load shape, summarised: median, min and max over the runs that finished. */
final case class Row(scenario: String, approach: String, producers: Int, runs: Vector[Measurement]):
  private def ok = runs.filter(_.status == Status.Ok)
  def makespan: Stats = Stats.of(ok.map(_.makespanMs))
  def ideal: Stats = Stats.of(runs.map(_.idealMs))
  def ratio: Stats = Stats.of(ok.map(_.ratio))
  def boundedIdeal: Stats = Stats.of(runs.flatMap(_.boundedIdealMs))

  /** The bounded ideal over the unbounded one, run by run: how far the buffer alone puts the ideal. */
  def boundedOverIdeal: Stats = Stats.of(runs.flatMap(m => m.boundedIdealMs.map(_ / m.idealMs)))
  def boundedRatio: Stats = Stats.of(ok.filter(_.boundedIdealMs.nonEmpty).map(_.boundedRatio))
  def ownOrderRatio: Stats = Stats.of(ok.filter(_.ownOrderMs.nonEmpty).map(_.ownOrderRatio))
  def peakThreads: Option[Int] = runs.flatMap(_.peakThreads).maxOption
  def peakHeapMiB: Option[Long] = runs.flatMap(_.peakHeapMiB).maxOption
  def peakInFlight: Int = runs.map(_.peakInFlight).max

  /** `ok`, or what went wrong (with how many runs, when not all). */
  def status: String =
    val bad = runs.filter(_.status != Status.Ok)
    if bad.isEmpty then "ok"
    else
      val kinds = bad.groupBy(_.status.label).map((k, v) =>
        if v.size == runs.size then k else s"$k ${v.size}/${runs.size}"
      )
      kinds.toVector.sorted.mkString(", ")

object Rows:
  /** One row per (scenario, approach), in the order they were run. */
  def of(measurements: Vector[Measurement]): Vector[Row] =
    measurements.map(m => (m.scenario, m.approach)).distinct.map { (s, a) =>
      val runs = measurements.filter(m => m.scenario == s && m.approach == a)
      Row(s, a, runs.head.producers, runs)
    }
