package weir.lab.blocking

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import io.circe.Json
import io.circe.syntax.*
import org.knowm.xchart.CategoryChart
import org.knowm.xchart.style.Styler
import scopt.OParser
import weir.cli.{CommandLine, Durations, Table}
import weir.cli.CommandLine.positive
import weir.lab.{Experiment, Tally}
import weir.lab.report.{ElapsedChart, ExperimentIo}
import weir.lab.report.ExperimentIo.number

import java.nio.file.{Path, Paths}
import scala.concurrent.duration.*

/**
 * `./weir lab blocking`: seed 003's experiment. 100 tasks that each block their thread for 3 s, run by
 * Scala `Future` on the global pool without and with `scala.concurrent.blocking`, on a fixed pool of 2
 * with the marker, by Cats Effect's `IO.blocking`, by virtual threads and by weir's blocking handler;
 * each against one task's duration, the ideal when no task waits for a thread.
 */
object Blocking extends Experiment:
  val label = "blocking"
  val summary =
    "seed 003: blocking tasks on the global pool (with/without blocking{}), IO.blocking, virtual threads, weir"

  final case class Settings(
      tasks: Int = 100,
      blockMs: Long = 3000,
      timeScale: Option[Double] = None,
      quick: Boolean = false,
      approaches: Seq[String] = Nil,
      warmupRuns: Int = 0,
      json: Option[Path] = None,
      chart: Option[Path] = None
  ):
    /** As given, else 0.01 with `--quick` (30 ms tasks), else 1. */
    def scale: Double = timeScale.getOrElse(if quick then 0.01 else 1.0)
    def duration: FiniteDuration = math.round(blockMs * scale * 1e6).nanos

  /**
   * One approach's measured run; `elapsedMs` is NaN unless `error` is empty. With warm-up runs, `firstRunMs` is
   * the approach's first run in this JVM (the same work, before the warm-up's other runs) and `elapsedMs` the
   * run after them.
   */
  final case class Record(
      approach: String,
      threads: Option[Int],
      elapsedMs: Double,
      firstRunMs: Option[Double],
      idealMs: Double,
      boundMs: Double,
      threadsStart: Int,
      peakThreads: Int,
      peakInFlight: Int,
      completed: Int,
      error: Option[String]
  ):
    def ratio: Double = if error.isEmpty && idealMs > 0 then elapsedMs / idealMs else Double.NaN

  private val builder = OParser.builder[Settings]
  val parser: OParser[Unit, Settings] =
    import builder.*
    OParser.sequence(
      programName("weir lab blocking"),
      head("seed 003: tasks that block their thread, on the pools that do and do not add threads"),
      help("help").text("print this help"),
      opt[Int]("tasks").valueName("N")
        .validate(positive("--tasks"))
        .action((n, s) => s.copy(tasks = n)).text("number of tasks (default 100)"),
      Durations.opt(builder, "block-time").validate(Durations.positive("--block-time"))
        .validate(Durations.wholeMillis("--block-time"))
        .action((d, s) => s.copy(blockMs = d.toMillis))
        .text(s"how long each task blocks its thread (default ${Durations.show(Settings().blockMs.millis)})"),
      opt[Double]("time-scale").valueName("X")
        .validate(x =>
          if x > 0 && x <= 10 then success else failure(s"--time-scale must be in (0, 10], was: $x")
        )
        .action((x, s) => s.copy(timeScale = Some(x)))
        .text("multiply the blocking time by X (default 1; 0.01 with --quick)"),
      opt[Seq[String]]("approaches").valueName("a,b")
        .validate(ns =>
          ns.find(n => !Approach.all.exists(_.name == n)) match
            case Some(bad) =>
              failure(
                s"--approaches: unknown approach '$bad' (known: ${Approach.all.map(_.name).mkString(", ")})"
              )
            case None => success
        )
        .action((ns, s) => s.copy(approaches = ns))
        .text(s"only these (default: all): ${Approach.all.map(_.name).mkString(", ")}"),
      opt[Int]("warmup-runs").valueName("R")
        .validate(r => if r >= 0 then success else failure(s"--warmup-runs must be >= 0, was: $r"))
        .action((r, s) => s.copy(warmupRuns = r))
        .text("run each approach R times more, the same work, before the run measured (default 0: cold)"),
      opt[Unit](
        "quick"
      ).action((_, s) => s.copy(quick = true)).text("for CI: 30 ms tasks unless --time-scale"),
      opt[String]("json").valueName("FILE").action((f, s) => s.copy(json = Some(Paths.get(f))))
        .text("also write the results as JSON (default: none)"),
      opt[String]("chart").valueName("FILE.png").action((f, s) => s.copy(chart = Some(Paths.get(f))))
        .text("also draw elapsed vs ideal per approach (PNG) (default: none)")
    )

  def run(args: List[String]): IO[ExitCode] = CommandLine.runWith(parser, args, Settings())(execute(_).void)

  override def check(args: List[String]): Either[String, Unit] = CommandLine.check(parser, args, Settings())

  def selected(s: Settings): Vector[Approach] =
    if s.approaches.isEmpty then Approach.all else Approach.all.filter(a => s.approaches.contains(a.name))

  def execute(s: Settings): IO[Vector[Record]] =
    val cores = Runtime.getRuntime.availableProcessors
    for
      _ <- IO.println(
        f"weir lab blocking — ${s.tasks} tasks, each blocking ${s.duration.toNanos / 1e6}%.1f ms (${s.blockMs} ms × ${s.scale}), " +
          s"$cores cores, JDK ${System.getProperty("java.version")}"
      )
      records <- selected(s).traverse(a => warmedUp(a, s, cores))
      _ <- IO.println(table(records))
      _ <- s.json.traverse_(p => ExperimentIo.writeJson(p, json(s, records)))
      _ <- s.chart.traverse_(p => ExperimentIo.writePng(p, chart(records)))
    yield records

  /** `s.warmupRuns` runs of `approach`, then the one measured ([[afterWarmUp]]), each with a tally of its own. */
  def warmedUp(approach: Approach, s: Settings, cores: Int): IO[Record] =
    afterWarmUp(s.warmupRuns, IO.defer(measure(approach, s.tasks, s.duration, cores)))

  /**
   * `warmupRuns` runs of `once` and then the one measured, each the same work; the first run's time is kept
   * beside the last. A warm-up run that fails is the record (a later run would hide it), and no run follows.
   */
  def afterWarmUp(warmupRuns: Int, once: IO[Record]): IO[Record] =
    def loop(done: Int, first: Option[Double]): IO[Record] =
      once.flatMap { r =>
        val firstRun = first.orElse(Option.when(warmupRuns > 0)(r.elapsedMs))
        val record = r.copy(firstRunMs = firstRun)
        if done == warmupRuns || r.error.nonEmpty then
          IO(System.err.println(progress(record, None))).as(
            record.copy(error =
              r.error.map(e => if done < warmupRuns then s"warm-up run ${done + 1}: $e" else e)
            )
          )
        else IO(System.err.println(progress(record, Some(done + 1)))) >> loop(done + 1, firstRun)
      }
    loop(0, None)

  def measure(approach: Approach, tasks: Int, duration: FiniteDuration, cores: Int): IO[Record] =
    val d = duration.toNanos
    val ideal = Ideal.makespan(tasks, d)
    val bound = approach.threads(cores).fold(ideal)(t => Ideal.withThreads(tasks, d, t))
    val timeLimit = (bound * 3).nanos.max(30.seconds)
    val tally = new Tally(tasks)
    for
      _ <- IO(ExperimentIo.resetPeakThreads())
      threadsStart <- IO(ExperimentIo.liveThreads)
      t0 <- IO.monotonic
      _ <- IO(tally.restart())
      result <- approach.run(tasks, Approach.sleeper(tally, duration)).timeout(timeLimit).attempt
      t1 <- IO.monotonic
      peak <- IO(ExperimentIo.peakThreads)
    yield
      val wrong = tally.miscounted
      val error = result.left.toOption.map(_.toString).orElse(
        Option.when(
          wrong.nonEmpty
        )(s"${wrong.size} tasks not run exactly once, e.g. ${wrong.take(3).mkString(", ")}")
      )
      Record(
        approach.name,
        approach.threads(cores),
        if error.isEmpty then (t1 - t0).toNanos / 1e6 else Double.NaN,
        None,
        ideal / 1e6,
        bound / 1e6,
        threadsStart,
        peak,
        tally.peakInFlight,
        tally.completed,
        error
      )

  private def progress(r: Record, warmup: Option[Int]): String =
    val what = warmup.fold(r.approach)(k => s"${r.approach} (warm-up $k)")
    r.error.fold(f"  $what%-36s ${r.elapsedMs}%9.1f ms (ideal ${r.idealMs}%.1f ms)")(e =>
      f"  $what%-36s failed: $e"
    )

  def table(records: Vector[Record]): String =
    val warmed = records.exists(_.firstRunMs.nonEmpty)
    val header = Vector(
      "approach",
      "threads"
    ) ++ Option.when(warmed)("first run ms") ++ Vector(
      if warmed then "warm ms" else "elapsed ms",
      "ideal ms",
      "ratio",
      "bound ms",
      "threads at start",
      "peak threads",
      "peak blocked at once",
      "done"
    )
    val rows = records.map { r =>
      Vector(
        r.approach,
        r.threads.fold("grows")(_.toString)
      ) ++ Option.when(warmed)(r.firstRunMs.fold("—")(ms => if ms.isNaN then "failed" else f"$ms%.1f")) ++
        Vector(
          r.error.fold(f"${r.elapsedMs}%.1f")(_ => "failed"),
          f"${r.idealMs}%.1f",
          if r.ratio.isNaN then "—" else f"${r.ratio}%.2f",
          f"${r.boundMs}%.1f",
          r.threadsStart.toString,
          r.peakThreads.toString,
          r.peakInFlight.toString,
          r.completed.toString
        )
    }
    "\nideal: one task's duration (nothing waits for a thread); bound: ⌈tasks / threads⌉ durations for a fixed pool\n" +
      Option.when(warmed)(
        "first run: the approach's first in this JVM; warm: after the warm-up runs\n"
      ).getOrElse("") +
      Table.grid(header +: rows, rightAligned = (1 until header.size).toSet) +
      records.flatMap(r => r.error.map(e => s"  ${r.approach}: $e\n")).mkString

  def json(s: Settings, records: Vector[Record]): Json =
    Json.obj(
      "experiment" -> "blocking".asJson,
      "environment" -> ExperimentIo.environment,
      "settings" -> Json.obj(
        "tasks" -> s.tasks.asJson,
        "block_ms" -> s.blockMs.asJson,
        "time_scale" -> s.scale.asJson,
        "warmup_runs" -> s.warmupRuns.asJson
      ),
      "records" -> records.map { r =>
        Json.obj(
          "approach" -> r.approach.asJson,
          "threads" -> r.threads.asJson,
          "elapsed_ms" -> number(r.elapsedMs),
          "first_run_ms" -> r.firstRunMs.fold(Json.Null)(number),
          "ideal_ms" -> number(r.idealMs),
          "ratio" -> number(r.ratio),
          "bound_ms" -> number(r.boundMs),
          "threads_start" -> r.threadsStart.asJson,
          "peak_threads" -> r.peakThreads.asJson,
          "peak_in_flight" -> r.peakInFlight.asJson,
          "completed" -> r.completed.asJson,
          "status" -> (if r.error.isEmpty then "ok" else "failed").asJson,
          "error" -> r.error.asJson
        )
      }.asJson
    )

  def chart(records: Vector[Record]): CategoryChart =
    ElapsedChart(
      "seed 003: elapsed vs ideal, tasks blocking their thread (lower is better)",
      records.map(r => ElapsedChart.Bar(r.approach, r.elapsedMs, r.idealMs)),
      Styler.LegendPosition.InsideNE,
      labelRotation = 20
    )
