package weir.lab.compare.report

import cats.effect.IO
import org.knowm.xchart.*
import org.knowm.xchart.style.lines.SeriesLines
import org.knowm.xchart.style.markers.SeriesMarkers
import weir.lab.compare.{Measurement, Status}
import weir.lab.compare.scenarios.{Ideal, Plan, Workload}

import java.nio.file.{Files, Path}
import scala.jdk.CollectionConverters.*

/**
 * `--report DIR`: PNG charts drawn with XChart and an `index.html` that shows them beside the table.
 *
 *   - `ratios.png`: ratio to ideal (median over runs) per approach and load shape;
 *   - `timeline-<shape>.png`: tasks completed over time by every approach in run 0, with the ideal;
 *   - `timeline-<shape>-<approach>.png`: one approach in run 0: produced, completed and the ideal's completed.
 */
object Report:

  def write(
      dir: Path,
      env: JsonReport.Environment,
      workloads: Vector[Workload],
      measurements: Vector[Measurement]
  ): IO[Unit] =
    IO.blocking {
      System.setProperty("java.awt.headless", "true")
      val _ = Files.createDirectories(dir)
      val rows = Rows.of(measurements)
      val shapes = workloads.filter(w => rows.exists(_.scenario == w.name))
      save(ratioChart(rows, shapes.map(_.name)), dir.resolve("ratios"))
      val timelines = shapes.map { w =>
        val plan = Plan.draw(w, env.seed, 0)
        val firstRun = measurements.filter(m => m.scenario == w.name && m.run == 0)
        val scale = firstRun.headOption.fold(1.0)(m =>
          if m.idealMs > 0 then m.idealMs / Ideal.of(plan, m.producers).makespan else 1.0
        )
        save(allTimeline(w, plan, firstRun, env.timeScale), dir.resolve(s"timeline-${w.name}"))
        val singles = firstRun.filter(_.status == Status.Ok).map { m =>
          save(oneTimeline(w, plan, m, scale), dir.resolve(s"timeline-${w.name}-${m.approach}"))
          m.approach
        }
        (w, singles)
      }
      val _ = Files.writeString(dir.resolve("index.html"), Html.page(env, rows, shapes, timelines))
    }

  private def save(chart: org.knowm.xchart.internal.chartpart.Chart[?, ?], base: Path): Unit =
    BitmapEncoder.saveBitmap(chart, base.toString, BitmapEncoder.BitmapFormat.PNG)

  private def ratioChart(rows: Vector[Row], shapes: Vector[String]): CategoryChart =
    val chart = new CategoryChartBuilder().width(
      1000
    ).height(500).title("makespan / ideal (median over runs; lower is better)")
      .xAxisTitle("load shape").yAxisTitle("ratio to ideal").build()
    chart.getStyler.setLegendPosition(org.knowm.xchart.style.Styler.LegendPosition.OutsideE)
    rows.map(_.approach).distinct.foreach { a =>
      val values = shapes.map(s =>
        rows.find(r => r.scenario == s && r.approach == a).map(
          _.ratio.median
        ).filterNot(_.isNaN).getOrElse(0.0)
      )
      if values.exists(_ > 0) then
        val _ = chart.addSeries(a, shapes.asJava, values.map(v => Double.box(v): Number).asJava)
    }
    chart

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
