package weir.lab.adaptive

import io.circe.Json
import io.circe.syntax.*
import org.knowm.xchart.*
import org.knowm.xchart.style.Styler
import org.knowm.xchart.style.lines.SeriesLines
import org.knowm.xchart.style.markers.SeriesMarkers
import weir.cli.Table
import weir.lab.report.Html

import java.awt.{BasicStroke, Color}
import java.nio.file.{Files, Path}
import scala.concurrent.duration.*

/** The terminal table, `--json FILE`, `--chart FILE` (PNG) and `--html FILE` of `./weir lab adaptive`. */
object AdaptiveReport:

  private def ms(d: FiniteDuration): String = f"${d.toNanos / 1e6}%.1f"

  private def settledText(s: Vector[Option[FiniteDuration]]): String =
    s.map(_.fold("never")(d => f"${d.toMillis / 1000.0}%.1f s")).mkString(", ")

  def table(
      results: Vector[Trial.Result],
      verdicts: Map[String, Analysis.Verdict],
      model: Upstream.Model,
      best: Option[Trial.Result]
  ): String =
    s"\n${upstream(results, model)}\n" +
      Table.grid(cells(results, model, best), rightAligned = numbers) +
      s"$targetsHeading:\n" + targets(verdicts).map(t => s"  $t").mkString("\n") + "\n"

  /** The columns of [[cells]] that hold numbers. */
  private val numbers = Set(1, 2, 3, 4, 5, 6)

  private val targetsHeading =
    "targets (adaptive limits, never told K; settled = limit within [K, 2K] for a whole second)"

  /** The upstream's phases and latencies, in one line. */
  def upstream(results: Vector[Trial.Result], model: Upstream.Model): String =
    val phases = model.phases(results.headOption.fold(Duration.Zero)(_.duration))
      .map((from, to, k) => s"K = $k from ${from.toSeconds} s to ${to.toSeconds} s").mkString(", ")
    s"upstream: $phases; unloaded latency ${ms(model.base)} ms; hard cap ${model.hardCap}; " +
      s"refusals take ${ms(model.errorLatency)} ms"

  /** The table, header first: one row per limit. */
  def cells(
      results: Vector[Trial.Result],
      model: Upstream.Model,
      best: Option[Trial.Result]
  ): Vector[Vector[String]] =
    val header = Vector(
      "limit",
      "throughput/s",
      "of best fixed",
      "p50 ms",
      "p99 ms",
      "p99 / unloaded",
      "errors",
      "settled in each phase"
    )
    val rows = results.map { r =>
      Vector(
        r.name,
        f"${r.throughput}%.0f",
        best.fold("")(b => f"${100 * r.throughput / b.throughput}%.1f%%"),
        ms(r.p50),
        ms(r.p99),
        f"${r.p99.toNanos.toDouble / model.base.toNanos}%.2f",
        f"${r.errors} (${100 * r.errorRate}%.1f%%)",
        settledText(Analysis.settled(r, model))
      )
    }
    header +: rows

  /** Each adaptive limit against the targets, with PASS or FAIL. */
  def targets(verdicts: Map[String, Analysis.Verdict]): Vector[String] =
    verdicts.values.toVector.sortBy(_.name).map { v =>
      def mark(ok: Boolean) = if ok then "PASS" else "FAIL"
      s"${v.name}: throughput ${f"${100 * v.throughputRatio}%.1f"}% of the best fixed limit (target ≥ 90%) " +
        s"${mark(v.throughputOk)}; p99 ${f"${v.p99Ratio}%.2f"} × unloaded (target ≤ 2) ${mark(v.latencyOk)}; " +
        s"settled within ${v.settleTarget.toSeconds} s of every change (${settledText(v.settled)}) ${mark(v.followsOk)}"
    }

  def json(
      settings: Json,
      results: Vector[Trial.Result],
      verdicts: Map[String, Analysis.Verdict],
      model: Upstream.Model
  ): Json =
    Json.obj(
      "settings" -> settings,
      "results" -> results.map { r =>
        Json.obj(
          "name" -> r.name.asJson,
          "limit" -> r.limit.asJson,
          "duration_s" -> (r.duration.toMillis / 1000.0).asJson,
          "succeeded" -> r.succeeded.asJson,
          "errors" -> r.errors.asJson,
          "throughput_per_s" -> r.throughput.asJson,
          "p50_ms" -> (r.p50.toNanos / 1e6).asJson,
          "p99_ms" -> (r.p99.toNanos / 1e6).asJson,
          "max_ms" -> (r.max.toNanos / 1e6).asJson,
          "settled_s" -> Analysis.settled(r, model).map(_.map(_.toMillis / 1000.0)).asJson,
          "series" -> r.series.map(p =>
            Json.obj(
              "t_ms" -> p.t.toMillis.asJson,
              "limit" -> p.limit.asJson,
              "in_flight" -> p.inFlight.asJson,
              "capacity" -> p.capacity.asJson
            )
          ).asJson
        )
      }.asJson,
      "targets" -> verdicts.values.toVector.sortBy(_.name).map { v =>
        Json.obj(
          "name" -> v.name.asJson,
          "throughput_ratio" -> v.throughputRatio.asJson,
          "p99_over_unloaded" -> v.p99Ratio.asJson,
          "settled_s" -> v.settled.map(_.map(_.toMillis / 1000.0)).asJson,
          "throughput_ok" -> v.throughputOk.asJson,
          "latency_ok" -> v.latencyOk.asJson,
          "follows_ok" -> v.followsOk.asJson
        )
      }.asJson
    )

  /**
   * `--html FILE`: one self-contained page with the settings, the upstream, the table, the targets and the
   * chart (`chart-adaptive`).
   */
  def html(
      settings: String,
      results: Vector[Trial.Result],
      verdicts: Map[String, Analysis.Verdict],
      model: Upstream.Model,
      best: Option[Trial.Result]
  ): String =
    val shown = charted(results)
    Html.page(
      "weir lab adaptive",
      None,
      Html.paragraph(settings),
      Html.paragraph(upstream(results, model)),
      Html.table("results", cells(results, model, best), numbers),
      Html.paragraph(s"$targetsHeading:"),
      Html.list(targets(verdicts)),
      if shown.isEmpty then Html.empty else Html.chart("adaptive", chart(shown, model))
    )

  /** The runs the chart shows: the adaptive limits (a fixed limit is a flat line). */
  def charted(results: Vector[Trial.Result]): Vector[Trial.Result] =
    results.filter(_.name.startsWith("adaptive"))

  /** [[chart]] as a PNG exactly at `path`. */
  def writeChart(path: Path, results: Vector[Trial.Result], model: Upstream.Model): Unit =
    Option(path.toAbsolutePath.getParent).foreach(p => Files.createDirectories(p))
    BitmapEncoder.saveBitmap(
      chart(results, model),
      path.toString.stripSuffix(".png"),
      BitmapEncoder.BitmapFormat.PNG
    )

  /** The capacity, the hard cap, and each run's limit and in-flight count over time. */
  def chart(results: Vector[Trial.Result], model: Upstream.Model): XYChart =
    System.setProperty("java.awt.headless", "true")
    val chart = new XYChartBuilder().width(1100).height(600)
      .title(
        "weir lab adaptive: limit and in-flight over time"
      ).xAxisTitle("s").yAxisTitle("requests").build()
    chart.getStyler.setLegendPosition(Styler.LegendPosition.OutsideS)
    chart.getStyler.setMarkerSize(0)
    val end = results.headOption.fold(Duration.Zero)(_.duration)
    val phases = model.phases(end)
    def stepLine(name: String, f: Int => Int, style: BasicStroke, color: Color): Unit =
      val xs = phases.flatMap((from, to, _) => Vector(from, to)).map(_.toMillis / 1000.0)
      val ys = phases.flatMap((_, _, k) => Vector(f(k), f(k))).map(_.toDouble)
      val s = chart.addSeries(name, xs.toArray, ys.toArray)
      s.setMarker(SeriesMarkers.NONE)
      s.setLineColor(color)
      val _ = s.setLineStyle(style)
    stepLine("capacity K (hidden)", identity, SeriesLines.SOLID, Color.BLACK)
    stepLine(s"hard cap (${model.hardCap})", model.hardCap.of, SeriesLines.DASH_DASH, Color.GRAY)
    val palette =
      Vector(new Color(0, 114, 178), new Color(213, 94, 0), new Color(0, 158, 115), new Color(204, 121, 167))
    results.zipWithIndex.foreach { (r, i) =>
      val color = palette(i % palette.size)
      val xs = r.series.map(_.t.toMillis / 1000.0).toArray
      val limit = chart.addSeries(s"${r.name}: limit", xs, r.series.map(_.limit.toDouble).toArray)
      limit.setMarker(SeriesMarkers.NONE)
      limit.setLineColor(color)
      val inFlight = chart.addSeries(s"${r.name}: in flight", xs, r.series.map(_.inFlight.toDouble).toArray)
      inFlight.setMarker(SeriesMarkers.NONE)
      inFlight.setLineColor(color.brighter())
      inFlight.setLineStyle(SeriesLines.DOT_DOT)
    }
    chart
