package weir.lab.requests

import cats.effect.IO
import io.circe.Json
import io.circe.syntax.*
import org.knowm.xchart.{BitmapEncoder, XYChart, XYChartBuilder, XYSeries}
import org.knowm.xchart.style.markers.SeriesMarkers
import weir.cli.Table
import weir.lab.report.{ExperimentIo, Html}

import java.nio.file.{Files, Path}

/** `./weir lab requests`' outputs: the table, `--json FILE`, `--chart DIR` and `--html FILE`. */
object RequestsReport:

  /** The run's parameters, printed above the table and written in the JSON. */
  final case class Environment(
      n: Long,
      concurrency: Int,
      maxDelayMs: Long,
      seed: Long,
      client: String,
      server: String,
      idealMs: Long,
      meanDelayMs: Double,
      littlePerSecond: Double,
      cores: Int,
      jdk: String,
      loadAverage: Double,
      warmup: Long,
      warmupRuns: Int
  ):
    def describe: String =
      f"$n%,d requests, concurrency $concurrency%,d, delays uniform on [0, $maxDelayMs) ms (seed $seed, mean " +
        f"$meanDelayMs%.1f ms); client $client, server $server; $warmupText; ideal makespan " +
        f"${idealMs / 1000.0}%.3f s, Little's bound ${littlePerSecond}%,.0f req/s; $cores cores, JDK $jdk, " +
        f"load average at start $loadAverage%.2f"

    private def warmupText: String =
      if warmup == 0 then "no warm-up" else f"warm-up $warmupRuns × $warmup%,d requests"

    def toJson: Json = Json.obj(
      "n" -> n.asJson,
      "concurrency" -> concurrency.asJson,
      "max_delay_ms" -> maxDelayMs.asJson,
      "seed" -> seed.asJson,
      "client" -> client.asJson,
      "server" -> server.asJson,
      "ideal_ms" -> idealMs.asJson,
      "mean_delay_ms" -> meanDelayMs.asJson,
      "little_bound_per_s" -> littlePerSecond.asJson,
      "cores" -> cores.asJson,
      "jdk" -> jdk.asJson,
      "load_average" -> loadAverage.asJson,
      "warmup_requests" -> warmup.asJson,
      "warmup_runs" -> (if warmup == 0 then 0 else warmupRuns).asJson
    )

  def table(results: Vector[RequestResult]): String =
    Table.grid(cells(results), rightAligned = numbers) + notes(results).map(n => s"  $n\n").mkString

  /** The columns of [[cells]] that hold numbers. */
  private val numbers: Set[Int] = (2 to 16).toSet

  /** The table, header first: one row per approach. */
  def cells(results: Vector[RequestResult]): Vector[Vector[String]] =
    val header = Vector(
      "approach",
      "status",
      "makespan s",
      "ratio",
      "req/s",
      "of Little",
      "ok",
      "failed",
      "in flight c/s",
      "p50 ms",
      "p99 ms",
      "max ms",
      "fill s",
      "overhead ms mean/p99",
      "heap MiB (after GC)",
      "threads",
      "CPU s c/s"
    )
    val rows = results.map { r =>
      Vector(
        r.approach,
        r.status,
        f"${r.makespanMs / 1000}%.3f",
        if r.ratio.isNaN then "—" else f"${r.ratio}%.4f",
        f"${r.perSecond}%,.0f",
        if r.littleShare.isNaN then "—" else f"${r.littleShare * 100}%.1f%%",
        f"${r.succeeded}%,d",
        f"${r.failed}%,d",
        s"${r.clientPeakInFlight}/${r.serverPeakInFlight}",
        f"${r.p50Ms}%.1f",
        f"${r.p99Ms}%.1f",
        f"${r.maxMs}%.1f",
        if r.fillMs.isNaN then "—" else f"${r.fillMs / 1000}%.3f",
        if r.overheadMeanMs.isNaN then "—" else f"${r.overheadMeanMs}%.2f/${r.overheadP99Ms}%.1f",
        s"${r.peakHeapMiB} (${r.peakAfterGcMiB}) of ${r.heapCapMiB}",
        r.peakThreads.toString,
        f"${r.cpuMs / 1000.0}%.1f/${r.serverCpuMs / 1000.0}%.1f"
      )
    }
    header +: rows

  /** What an approach reported beside its numbers (why it failed, what it could not measure). */
  def notes(results: Vector[RequestResult]): Vector[String] =
    results.flatMap(r => r.detail.map(d => s"${r.approach}: $d"))

  def json(env: Environment, results: Vector[RequestResult]): Json =
    Json.obj("environment" -> env.toJson, "results" -> results.map(_.toJson).asJson)

  def writeJson(file: Path, env: Environment, results: Vector[RequestResult]): IO[Unit] =
    IO.blocking {
      Option(file.toAbsolutePath.getParent).foreach(Files.createDirectories(_))
      val _ = Files.writeString(file, json(env, results).spaces2)
    }

  /** One PNG per approach: `requests-<approach>.png` (see [[chart]]). */
  def writeCharts(dir: Path, env: Environment, results: Vector[RequestResult]): IO[Vector[Path]] =
    IO.blocking {
      val _ = Files.createDirectories(dir)
      results.filter(_.samples.nonEmpty).map { r =>
        val base = dir.resolve(s"requests-${r.approach}")
        BitmapEncoder.saveBitmap(chart(env, r), base.toString, BitmapEncoder.BitmapFormat.PNG)
        dir.resolve(s"requests-${r.approach}.png")
      }
    }

  /**
   * `--html FILE`: one self-contained page with the run's parameters, the table, the notes and every
   * approach's chart (`chart-requests-<approach>`).
   */
  def html(env: Environment, results: Vector[RequestResult]): String =
    val noted = notes(results)
    Html.page(
      "weir lab requests",
      None,
      Html.paragraph(env.describe),
      Html.table("results", cells(results), numbers),
      if noted.isEmpty then Html.empty else Html.list(noted),
      Html.concat(results.filter(_.samples.nonEmpty).map(r =>
        Html.chart(s"requests-${r.approach}", chart(env, r))
      ))
    )

  def writeHtml(file: Path, env: Environment, results: Vector[RequestResult]): IO[Unit] =
    IO.blocking(html(env, results)).flatMap(ExperimentIo.writeAtomically(file, _))

  /** One approach's run over time: requests in flight (left axis) and completed (right axis). */
  def chart(env: Environment, r: RequestResult): XYChart =
    System.setProperty("java.awt.headless", "true")
    val chart = new XYChartBuilder().width(900).height(450)
      .title(f"${r.approach}: ${env.n}%,d requests, concurrency ${env.concurrency}%,d (${r.status})")
      .xAxisTitle("s").yAxisTitle("in flight").build()
    chart.getStyler.setMarkerSize(0)
    chart.getStyler.setYAxisGroupPosition(1, org.knowm.xchart.style.Styler.YAxisPosition.Right)
    val t = r.samples.map(_.tMs / 1000.0).toArray
    val inFlight = chart.addSeries("in flight", t, r.samples.map(_.inFlight.toDouble).toArray)
    inFlight.setMarker(SeriesMarkers.NONE)
    inFlight.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line)
    val done = chart.addSeries("completed", t, r.samples.map(_.completed.toDouble).toArray)
    done.setMarker(SeriesMarkers.NONE)
    done.setYAxisGroup(1)
    chart.setYAxisGroupTitle(1, "completed")
    chart
