package weir.lab.channels

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import io.circe.Json
import io.circe.syntax.*
import org.knowm.xchart.{CategoryChart, XYChart, XYChartBuilder, XYSeries}
import org.knowm.xchart.style.Styler
import org.knowm.xchart.style.markers.SeriesMarkers
import scopt.OParser
import weir.cli.{CommandLine, Durations, Table}
import weir.cli.CommandLine.positive
import weir.lab.Experiment
import weir.lab.report.{ElapsedChart, ExperimentIo}
import weir.lab.report.ExperimentIo.number
import weir.lab.Delay

import java.nio.file.{Path, Paths}
import scala.concurrent.duration.*
import scala.util.Random

/**
 * `./weir lab channels`: seed 001's experiment. 100 tasks of 10–50 ms simulated I/O run by every
 * approach in turn (start-everything-and-collect-through-a-channel, a blocking parallel loop on 4
 * platform threads, an asynchronous bounded loop at 4, 40 and the number of cores, weir unbounded and at
 * 4 and 40), each against its zero-overhead ideal; then the throttled variant (two stages, the second
 * rate-limited).
 */
object Channels extends Experiment:
  val label = "channels"
  val summary =
    "seed 001: start-all + channel vs bounded parallel loops vs weir, and a throttled second stage"

  final case class Settings(
      tasks: Int = 100,
      minMs: Long = 10,
      maxMs: Long = 50,
      seed: Long = 0L,
      timeScale: Option[Double] = None,
      rate: Int = 200,
      burst: Int = 10,
      serviceMs: Long = 10,
      runs: Int = 3,
      quick: Boolean = false,
      json: Option[Path] = None,
      chart: Option[Path] = None
  ):
    /** The time scale in effect: as given, else 0.2 with `--quick`, else 1. */
    def scale: Double = timeScale.getOrElse(if quick then 0.2 else 1.0)

    /** A duration of `ms` workload milliseconds, scaled. */
    def scaled(ms: Long): FiniteDuration = math.round(ms * scale * 1e6).nanos

    /** The delays of the tasks (unscaled ms), drawn from `seed`: uniform on [min, max). */
    def delaysMs: Vector[Long] =
      val rnd = new Random(seed)
      Vector.fill(tasks)(Delay.Uniform(minMs, maxMs).sample(rnd))

    /** Timed runs per approach (after one untimed warm-up run): as given, 1 with `--quick`. */
    def measuredRuns: Int = if quick then 1 else runs

    def limits: Throttled.Limits =
      Throttled.Limits(rate.toLong, math.round(1e9 * scale).nanos, burst, scaled(serviceMs))

  /**
   * One approach's runs. Times in ms: `elapsedMs` is the median of the timed runs, `minMs` the fastest;
   * both NaN unless `error` is empty. Thread counts and tasks are those of the last run.
   */
  final case class Record(
      approach: String,
      limit: Option[Int],
      elapsedMs: Double,
      minMs: Double,
      idealMs: Double,
      threadsStart: Int,
      threadsEnd: Int,
      peakThreads: Int,
      peakInFlight: Int,
      completed: Int,
      error: Option[String]
  ):
    def ratio: Double = if error.isEmpty && idealMs > 0 then elapsedMs / idealMs else Double.NaN

  /** One throttled run: when the first parts were all done and when everything was, with the ideals. */
  final case class ThrottledRecord(
      shape: String,
      firstDoneMs: Double,
      firstIdealMs: Double,
      allDoneMs: Double,
      allIdealMs: Double,
      completed: Int,
      firstEnds: Vector[Long],
      secondEnds: Vector[Long]
  )

  private val builder = OParser.builder[Settings]
  val parser: OParser[Unit, Settings] =
    import builder.*
    OParser.sequence(
      programName("weir lab channels"),
      head("seed 001: a channel vs bounded parallel loops vs weir, and a throttled variant"),
      help("help").text("print this help"),
      opt[Int]("tasks").valueName("N")
        .validate(positive("--tasks"))
        .action((n, s) => s.copy(tasks = n)).text("number of tasks (default 100)"),
      Durations.opt(builder, "min-delay").validate(Durations.wholeMillis("--min-delay"))
        .action((d, s) => s.copy(minMs = d.toMillis))
        .text(s"shortest delay (default ${Durations.show(Settings().minMs.millis)})"),
      Durations.opt(builder, "max-delay").validate(Durations.positive("--max-delay"))
        .validate(Durations.wholeMillis("--max-delay"))
        .action((d, s) => s.copy(maxMs = d.toMillis))
        .text(
          s"delays are uniform on [min, max), in whole ms (default ${Durations.show(Settings().maxMs.millis)})"
        ),
      opt[Long](
        "seed"
      ).valueName("N").action((n, s) => s.copy(seed = n)).text("seed of the delays (default 0)"),
      opt[Double]("time-scale").valueName("X")
        .validate(x =>
          if x > 0 && x <= 10 then success else failure(s"--time-scale must be in (0, 10], was: $x")
        )
        .action((x, s) => s.copy(timeScale = Some(x)))
        .text("multiply every delay and the rate's period by X (default 1; 0.2 with --quick)"),
      opt[Int]("rate").valueName("R")
        .validate(positive("--rate"))
        .action((n, s) => s.copy(rate = n)).text("throttled variant: permits per second (default 200)"),
      opt[Int]("burst").valueName("N")
        .validate(positive("--burst"))
        .action((n, s) => s.copy(burst = n)).text("throttled variant: token bucket capacity (default 10)"),
      Durations.opt(builder, "service-time").validate(Durations.wholeMillis("--service-time"))
        .action((d, s) => s.copy(serviceMs = d.toMillis)).text(
          s"throttled variant: time of each rate-limited call (default ${Durations.show(Settings().serviceMs.millis)})"
        ),
      opt[Int]("runs").valueName("N")
        .validate(positive("--runs"))
        .action((n, s) => s.copy(runs = n))
        .text("timed runs per approach after one warm-up run; the median is shown (default 3)"),
      opt[Unit]("quick").action((_, s) => s.copy(quick = true))
        .text("for CI: delays × 0.2 unless --time-scale, one timed run"),
      opt[String]("json").valueName("FILE").action((f, s) => s.copy(json = Some(Paths.get(f))))
        .text("also write the results as JSON (default: none)"),
      opt[String]("chart").valueName("FILE.png").action((f, s) => s.copy(chart = Some(Paths.get(f))))
        .text(
          "also draw elapsed vs ideal (PNG), and the throttled timeline beside it (FILE-throttled.png) (default: none)"
        ),
      checkConfig(s =>
        if s.maxMs <= s.minMs then
          failure(s"--max-delay must be longer than --min-delay (${s.minMs}ms), was: ${s.maxMs}ms")
        else success
      )
    )

  def run(args: List[String]): IO[ExitCode] = CommandLine.runWith(parser, args, Settings())(execute(_).void)

  def check(args: List[String]): Either[String, Unit] = CommandLine.check(parser, args, Settings())

  /** Runs everything, prints the tables, writes the JSON and charts asked for. */
  def execute(s: Settings): IO[(Vector[Record], Vector[ThrottledRecord])] =
    val cores = Runtime.getRuntime.availableProcessors
    for
      _ <- IO.println(
        f"weir lab channels — ${s.tasks} tasks, delays uniform on [${s.minMs}, ${s.maxMs}) ms × ${s.scale}%.2f, seed ${s.seed}, " +
          s"${s.measuredRuns} timed run(s) after a warm-up, " +
          s"$cores cores, JDK ${System.getProperty("java.version")}"
      )
      delaysMs = s.delaysMs
      delays = delaysMs.map(s.scaled)
      records <- Approach.all(cores).traverse(a =>
        measure(a, delays, s.measuredRuns).flatTap(r => IO(System.err.println(progress(r))))
      )
      _ <- IO.println(table(records))
      throttled <-
        // one untimed warm-up run of each shape first
        Throttled.Shape.values.toVector.traverse(shape =>
          measureThrottled(shape, delays, s.limits) *> measureThrottled(shape, delays, s.limits)
        )
      _ <- IO.println(throttledTable(s, throttled))
      _ <- s.json.traverse_(p => ExperimentIo.writeJson(p, json(s, records, throttled)))
      _ <- s.chart.traverse_ { p =>
        ExperimentIo.writePng(p, chart(records)) *>
          ExperimentIo.writePng(ExperimentIo.sibling(p, "-throttled"), throttledChart(throttled))
      }
    yield (records, throttled)

  /** Runs `approach` over `delays` (real clock): one warm-up run, then `runs` timed runs. */
  def measure(approach: Approach, delays: Vector[FiniteDuration], runs: Int): IO[Record] =
    (once(approach, delays) *> once(approach, delays).replicateA(runs)).map { timed =>
      val last = timed.last
      val ok = timed.forall(_.error.isEmpty)
      val sorted = timed.map(_.elapsedMs).sorted
      last.copy(
        elapsedMs = if ok then sorted(sorted.size / 2) else Double.NaN,
        minMs = if ok then sorted.head else Double.NaN,
        error = timed.flatMap(_.error).headOption
      )
    }

  /** Runs `approach` once over `delays` (real clock), counting threads around it. */
  def once(approach: Approach, delays: Vector[FiniteDuration]): IO[Record] =
    val ideal = Ideal.of(delays.map(_.toNanos), approach.limit)
    val timeLimit = (ideal * 20).nanos.max(30.seconds)
    for
      _ <- IO(ExperimentIo.resetPeakThreads())
      threadsStart <- IO(ExperimentIo.liveThreads)
      work <- Work(delays)
      t0 <- IO.monotonic
      result <- approach.run(work).timeout(timeLimit).attempt
      t1 <- IO.monotonic
      threadsEnd <- IO(ExperimentIo.liveThreads)
      peak <- IO(ExperimentIo.peakThreads)
    yield
      val wrong = work.tally.miscounted
      val error = result.left.toOption.map(_.toString).orElse(
        Option.when(
          wrong.nonEmpty
        )(s"${wrong.size} tasks not run exactly once, e.g. ${wrong.take(3).mkString(", ")}")
      )
      val elapsed = if error.isEmpty then (t1 - t0).toNanos / 1e6 else Double.NaN
      Record(
        approach.name,
        approach.limit,
        elapsed,
        elapsed,
        ideal / 1e6,
        threadsStart,
        threadsEnd,
        peak,
        work.tally.peakInFlight,
        work.tally.completed,
        error
      )

  def measureThrottled(shape: Throttled.Shape, delays: Vector[FiniteDuration], limits: Throttled.Limits)
      : IO[ThrottledRecord] =
    Throttled.run(shape, delays, limits).map { r =>
      val (firstIdeal, allIdeal) = Throttled.ideal(shape, delays.map(_.toNanos), limits)
      val firstEnds = r.first.tally.finishedAt
      val secondEnds = r.second.tally.finishedAt
      ThrottledRecord(
        shape.name,
        firstEnds.maxOption.getOrElse(0L) / 1e6,
        firstIdeal / 1e6,
        secondEnds.maxOption.getOrElse(0L) / 1e6,
        allIdeal / 1e6,
        math.min(r.first.tally.completed, r.second.tally.completed),
        firstEnds,
        secondEnds
      )
    }

  private def progress(r: Record): String =
    r.error.fold(f"  ${r.approach}%-22s ${r.elapsedMs}%8.1f ms (ideal ${r.idealMs}%.1f ms)")(e =>
      f"  ${r.approach}%-22s failed: $e"
    )

  def table(records: Vector[Record]): String =
    val header = Vector(
      "approach",
      "limit",
      "elapsed ms",
      "fastest ms",
      "ideal ms",
      "ratio",
      "threads at start",
      "threads at end",
      "peak threads",
      "peak in flight",
      "done"
    )
    val rows = records.map { r =>
      Vector(
        r.approach,
        r.limit.fold("none")(_.toString),
        r.error.fold(f"${r.elapsedMs}%.1f")(_ => "failed"),
        r.error.fold(f"${r.minMs}%.1f")(_ => "—"),
        f"${r.idealMs}%.1f",
        if r.ratio.isNaN then "—" else f"${r.ratio}%.2f",
        r.threadsStart.toString,
        r.threadsEnd.toString,
        r.peakThreads.toString,
        r.peakInFlight.toString,
        r.completed.toString
      )
    }
    "\nideal: the longest task when unbounded; the first-come list schedule on `limit` slots otherwise\n" +
      Table.grid(header +: rows, rightAligned = (1 to 10).toSet) +
      records.flatMap(r => r.error.map(e => s"  ${r.approach}: $e\n")).mkString

  def throttledTable(s: Settings, rs: Vector[ThrottledRecord]): String =
    val header = Vector("throttled", "first parts done ms", "ideal", "all done ms", "ideal", "done")
    val rows = rs.map(r =>
      Vector(
        r.shape,
        f"${r.firstDoneMs}%.1f",
        f"${r.firstIdealMs}%.1f",
        f"${r.allDoneMs}%.1f",
        f"${r.allIdealMs}%.1f",
        r.completed.toString
      )
    )
    f"\nthrottled: second part limited to ${s.rate} permits per ${s.scale}%.2f s (burst ${s.burst}), then ${s.serviceMs *
        s.scale}%.1f ms each\n" +
      Table.grid(header +: rows, rightAligned = (1 to 5).toSet)

  def json(s: Settings, records: Vector[Record], throttled: Vector[ThrottledRecord]): Json =
    Json.obj(
      "experiment" -> "channels".asJson,
      "environment" -> ExperimentIo.environment,
      "settings" -> Json.obj(
        "tasks" -> s.tasks.asJson,
        "min_ms" -> s.minMs.asJson,
        "max_ms" -> s.maxMs.asJson,
        "seed" -> s.seed.asJson,
        "time_scale" -> s.scale.asJson,
        "rate_per_second" -> s.rate.asJson,
        "burst" -> s.burst.asJson,
        "service_ms" -> s.serviceMs.asJson,
        "runs" -> s.measuredRuns.asJson
      ),
      "records" -> records.map { r =>
        Json.obj(
          "approach" -> r.approach.asJson,
          "limit" -> r.limit.asJson,
          "elapsed_ms" -> number(r.elapsedMs),
          "fastest_ms" -> number(r.minMs),
          "ideal_ms" -> number(r.idealMs),
          "ratio" -> number(r.ratio),
          "threads_start" -> r.threadsStart.asJson,
          "threads_end" -> r.threadsEnd.asJson,
          "peak_threads" -> r.peakThreads.asJson,
          "peak_in_flight" -> r.peakInFlight.asJson,
          "completed" -> r.completed.asJson,
          "status" -> (if r.error.isEmpty then "ok" else "failed").asJson,
          "error" -> r.error.asJson
        )
      }.asJson,
      "throttled" -> throttled.map { r =>
        Json.obj(
          "shape" -> r.shape.asJson,
          "first_done_ms" -> number(r.firstDoneMs),
          "first_ideal_ms" -> number(r.firstIdealMs),
          "all_done_ms" -> number(r.allDoneMs),
          "all_ideal_ms" -> number(r.allIdealMs),
          "completed" -> r.completed.asJson
        )
      }.asJson
    )

  def chart(records: Vector[Record]): CategoryChart =
    ElapsedChart(
      "seed 001: elapsed (median) vs ideal per approach (lower is better)",
      records.map(r => ElapsedChart.Bar(r.approach, r.elapsedMs, r.idealMs)),
      Styler.LegendPosition.InsideNW,
      labelRotation = 30
    )

  def throttledChart(rs: Vector[ThrottledRecord]): XYChart =
    val c = new XYChartBuilder().width(900).height(450)
      .title("throttled: tasks done over time (first part / rate-limited second part)")
      .xAxisTitle("ms").yAxisTitle("tasks").build()
    c.getStyler.setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Step)
    c.getStyler.setLegendPosition(Styler.LegendPosition.InsideSE)
    def steps(ends: Vector[Long]): (Array[Double], Array[Double]) =
      val sorted = ends.sorted.map(_ / 1e6)
      ((0.0 +: sorted).toArray, (0 to sorted.size).map(_.toDouble).toArray)
    rs.foreach { r =>
      val (x1, y1) = steps(r.firstEnds)
      c.addSeries(s"${r.shape}: first part", x1, y1).setMarker(SeriesMarkers.NONE)
      val (x2, y2) = steps(r.secondEnds)
      c.addSeries(s"${r.shape}: rate-limited part", x2, y2).setMarker(SeriesMarkers.NONE)
    }
    c
