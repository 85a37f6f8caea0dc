package weir.lab.compare.report

import org.knowm.xchart.*
import org.knowm.xchart.internal.chartpart.Chart
import org.knowm.xchart.style.lines.SeriesLines
import org.knowm.xchart.style.markers.SeriesMarkers
import weir.lab.compare.{Measurement, Status}
import weir.lab.compare.scenarios.{Ideal, Plan, Workload}

import scala.jdk.CollectionConverters.*

/**
 * `compare`'s charts, drawn with XChart; each is named as its PNG file in `--report DIR` and as its id in the
 * HTML page (`chart-NAME`).
 *
 *   - `ratios`: ratio to ideal (median over runs) per approach and load shape; absent when no run finished;
 *   - `timeline-<shape>`: tasks completed over time by every approach in run 0, with the ideal;
 *   - `timeline-<shape>-<approach>`: one approach in run 0: produced, completed and the ideal's completed.
 */
final case class Charts(ratios: Option[Charts.Named], timelines: Vector[Charts.Timeline]):
  def all: Vector[Charts.Named] = ratios.toVector ++ timelines.flatMap(t => t.all +: t.singles)

object Charts:

  final case class Named(name: String, chart: Chart[?, ?])

  /**
   * A load shape's charts: every approach together, then each finished approach alone. A single depends on
   * its approach's run 0 alone, so once drawn it stays the same for the rest of the run.
   */
  final case class Timeline(workload: Workload, all: Named, singles: Vector[Named])

  /** The charts of the load shapes that have measurements, in `workloads`' order. */
  def of(
      env: JsonReport.Environment,
      workloads: Vector[Workload],
      measurements: Vector[Measurement]
  ): Charts =
    System.setProperty("java.awt.headless", "true")
    val rows = Rows.of(measurements)
    val shapes = workloads.filter(w => rows.exists(_.scenario == w.name))
    val timelines = shapes.flatMap { w =>
      val firstRun = measurements.filter(m => m.scenario == w.name && m.run == 0)
      Option.when(firstRun.nonEmpty)(timeline(env, w, firstRun))
    }
    Charts(ratioChart(rows, shapes.map(_.name)).map(Named("ratios", _)), timelines)

  private def timeline(env: JsonReport.Environment, w: Workload, firstRun: Vector[Measurement]): Timeline =
    val plan = Plan.draw(w, env.seed, 0)
    // each approach's own time scale (the blocking demo's differs on the virtual clock): a single timeline
    // is then drawn from its own measurement alone, and never changes once drawn
    val singles = firstRun.filter(_.status == Status.Ok).map { m =>
      val scale = if m.idealMs > 0 then m.idealMs / Ideal.of(plan, m.producers).makespan else 1.0
      Named(s"timeline-${w.name}-${m.approach}", oneTimeline(w, plan, m, scale))
    }
    Timeline(w, Named(s"timeline-${w.name}", allTimeline(w, plan, firstRun, env.timeScale)), singles)

  private def ratioChart(rows: Vector[Row], shapes: Vector[String]): Option[CategoryChart] =
    val chart = new CategoryChartBuilder().width(
      1000
    ).height(500).title("makespan / ideal (median over runs; lower is better)")
      .xAxisTitle("load shape").yAxisTitle("ratio to ideal").build()
    chart.getStyler.setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.OutsideE)
    val series = rows.map(_.approach).distinct.flatMap { a =>
      val values = shapes.map(s =>
        rows.find(r => r.scenario == s && r.approach == a).map(
          _.ratio.median
        ).filterNot(_.isNaN).getOrElse(0.0)
      )
      Option.when(values.exists(_ > 0))(a -> values)
    }
    // XChart cannot draw a category chart without a series
    Option.when(series.nonEmpty) {
      series.foreach { (a, values) =>
        val _ = chart.addSeries(a, shapes.asJava, values.map(v => Double.box(v): Number).asJava)
      }
      chart
    }

  /** A cumulative count as a step curve: (t, count) after each event, times in ms. */
  private def steps(timesMs: Vector[Double], weights: Vector[Int]): (Array[Double], Array[Double]) =
    val sorted = timesMs.zip(weights).sortBy(_._1)
    val xs = 0.0 +: sorted.map(_._1)
    val ys = 0.0 +: sorted.map(_._2.toDouble).scanLeft(0.0)(_ + _).drop(1)
    (xs.toArray, ys.toArray)

  private def timelineChart(title: String, width: Int, height: Int): XYChart =
    val chart = new XYChartBuilder().width(
      width
    ).height(height).title(title).xAxisTitle("ms").yAxisTitle("tasks").build()
    chart.getStyler.setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Step)
    chart.getStyler.setMarkerSize(0)
    chart

  private def allTimeline(w: Workload, plan: Plan, runs: Vector[Measurement], timeScale: Double): XYChart =
    val chart = timelineChart(s"${w.name}: tasks completed over time (run 0)", 1000, 600)
    chart.getStyler.setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.OutsideE)
    runs.filter(_.status == Status.Ok).foreach { m =>
      val (xs, ys) = steps(m.consumed.map(_ / 1e6), m.consumed.map(_ => 1))
      chart.addSeries(m.approach, xs, ys).setMarker(SeriesMarkers.NONE)
    }
    runs.map(_.producers).distinct.sorted.foreach { p =>
      val scale = runs.find(_.producers == p).fold(timeScale)(m => m.idealMs / Ideal.of(plan, p).makespan)
      val ideal = Ideal.of(plan, p)
      val (xs, ys) = steps(ideal.end.map(_ * scale), ideal.end.map(_ => 1))
      val s = chart.addSeries(s"ideal ($p producer${if p > 1 then "s" else ""})", xs, ys)
      s.setMarker(SeriesMarkers.NONE)
      s.setLineStyle(SeriesLines.DASH_DASH)
    }
    chart

  private def oneTimeline(w: Workload, plan: Plan, m: Measurement, scale: Double): XYChart =
    val chart = timelineChart(s"${w.name} · ${m.approach}", 560, 340)
    val (px, py) = steps(m.produced.map(_ / 1e6), Vector.tabulate(w.batches)(b => w.idsOf(b).size))
    chart.addSeries("produced", px, py).setMarker(SeriesMarkers.NONE)
    val (cx, cy) = steps(m.consumed.map(_ / 1e6), m.consumed.map(_ => 1))
    chart.addSeries("completed", cx, cy).setMarker(SeriesMarkers.NONE)
    val ideal = Ideal.of(plan, m.producers)
    val (ix, iy) = steps(ideal.end.map(_ * scale), ideal.end.map(_ => 1))
    val s = chart.addSeries("ideal completed", ix, iy)
    s.setMarker(SeriesMarkers.NONE)
    s.setLineStyle(SeriesLines.DASH_DASH)
    chart
