package weir.lab
package compare

import cats.effect.{ExitCode, IO, Resource}
import cats.syntax.all.*
import scopt.OParser
import weir.cli.{CommandLine, Durations}
import weir.cli.CommandLine.positive
import weir.lab.compare.approaches.*
import weir.lab.compare.report.*
import weir.lab.compare.scenarios.*
import weir.lab.report.{Html, LivePage}

import java.nio.file.{Files, Path, Paths}
import scala.collection.concurrent.TrieMap
import scala.concurrent.duration.*

/**
 * `./weir lab compare` (or `./weir compare`): the write-up's experiment (seed 000) — every approach on every
 * load shape, each run against the ideal schedule of the same delays — as a terminal table, optionally JSON,
 * PNG charts and a self-contained HTML page that follows the run while it goes.
 */
object Compare extends Experiment:

  val label = "compare"
  val summary = "seed 000: every task-processing approach and weir on three load shapes, against the ideal"

  /**
   * @param timeScale real delays are the workload's times this (real clock only; virtual time is free)
   * @param live      redraw the P/C lines while each approach runs (real clock only)
   * @param parallel  run the load shapes side by side (each shape's approaches still one at a time): the
   *                  full real run takes as long as its slowest shape instead of the sum, at the price of
   *                  the peak threads and heap, which are then the JVM's and not reported
   * @param orderedWindow how many tasks the write-up's ordered approaches may have started and not yet
   *                  emitted (default: the slots, as fs2 3's `parEvalMap(slots)`); see [[Bench.ordered]]
   * @param html      the self-contained HTML page, rewritten every `htmlEvery` while the run goes
   * @param peaks     report each run's peak threads and heap (never with `parallel`): the peaks are reset
   *                  before each run, with a collection of the whole heap
   */
  final case class Settings(
      clock: Clock = Clock.Real,
      timeScale: Double = 1.0,
      seed: Long = 0L,
      runs: Int = 1,
      workloads: Vector[Workload] = Workload.defaults,
      approaches: Vector[Approach] = Approach.all,
      json: Option[Path] = None,
      report: Option[Path] = None,
      html: Option[Path] = None,
      htmlEvery: FiniteDuration = 2.seconds,
      live: Boolean = true,
      parallel: Boolean = false,
      orderedWindow: Option[Int] = None,
      peaks: Boolean = true
  ):
    require(timeScale > 0, s"time scale must be > 0, was: $timeScale")
    require(runs > 0, s"runs must be > 0, was: $runs")

    /** Virtual time has nothing to shrink: the scale applies to the real clock only. */
    def scale: Double = if clock == Clock.Virtual then 1.0 else timeScale

  def run(args: List[String]): IO[ExitCode] =
    parse(args) match
      case Left(error) => CommandLine.refuse(error, OParser.usage(parser))
      case Right(None) => IO.println(OParser.usage(parser)).as(ExitCode.Success)
      case Right(Some(s)) => execute(s).as(ExitCode.Success)

  def check(args: List[String]): Either[String, Unit] = parse(args, readFiles = false).map(_ => ())

  /**
   * The settings, `Right(None)` for `--help`, or `Left(why)`. With `readFiles = false` a `--workload` file
   * is not read (its path may be relative to another directory); everything else is checked.
   */
  def parse(args: List[String], readFiles: Boolean = true): Either[String, Option[Settings]] =
    CommandLine.parse(parser, args, Options()) match
      case CommandLine.Parsed.Bad(error) => Left(error)
      case CommandLine.Parsed.Help(_) => Right(None)
      case CommandLine.Parsed.Ok(o) =>
        if !readFiles && o.workload.nonEmpty then Right(None) else settings(o).map(Some(_))

  def execute(s: Settings): IO[Vector[Measurement]] =
    val env = JsonReport.Environment.current(s.seed, s.clock.toString.toLowerCase, s.scale, s.runs)
    for
      _ <- IO.println(header(s))
      measurements <- livePage(s, env).use { page =>
        measureAll(s, m => IO(System.err.println(progressLine(m))) *> page(m))
      }
      _ <- s.html.traverse_(path => IO.println(s"wrote $path"))
      _ <- IO.println(ResultsTable.render(Rows.of(measurements), s.workloads, s.runs))
      _ <- s.json.traverse_ { path =>
        IO.blocking(Files.writeString(path, JsonReport.render(env, measurements).spaces2)) *>
          IO.println(s"wrote $path")
      }
      _ <- s.report.traverse_ { dir =>
        Report.write(dir, env, s.workloads, measurements) *> IO.println(s"wrote ${dir.resolve("index.html")}")
      }
    yield measurements

  /**
   * With `--html`: the page, drawn from the measurements finished so far (in the run's order), and what
   * records one; without, a no-op.
   */
  private def livePage(s: Settings, env: JsonReport.Environment): Resource[IO, Measurement => IO[Unit]] =
    s.html.fold(Resource.pure[IO, Measurement => IO[Unit]](_ => IO.unit)) { path =>
      val expected = s.workloads.size * s.runs * s.approaches.size
      // the single approaches' timelines never change once drawn (Charts.Timeline): drawing a PNG is most
      // of a page's cost, so each is drawn once, not on every write while the approaches that follow run
      val singles = TrieMap.empty[String, Html]
      LivePage.resource[Measurement](path, s.htmlEvery) { (finished, stage) =>
        val ms = inRunOrder(s, finished)
        val charts = Charts.of(env, s.workloads, ms)
        val kept = charts.timelines.flatMap(_.singles).map(_.name).toSet
        Page.render(
          env,
          s.workloads,
          ms,
          charts,
          stage,
          expected,
          c =>
            if kept(c.name) then singles.getOrElseUpdate(c.name, Page.chart(c)) else Page.chart(c)
        )
      }.map(page => page.add)
    }

  /** By load shape, run, then approach: the order of a sequential run, whatever order they finished in. */
  def inRunOrder(s: Settings, ms: Vector[Measurement]): Vector[Measurement] =
    val shapes = s.workloads.map(_.name).zipWithIndex.toMap
    val approaches = s.approaches.map(_.name).zipWithIndex.toMap
    ms.sortBy(m => (shapes(m.scenario), m.run, approaches(m.approach)))

  /**
   * Every (load shape, run, approach), one at a time so that peaks and timings are each approach's own.
   *
   * With `parallel`, the load shapes run side by side, except for approaches that block the runtime's
   * threads ([[Approach.blocksThreads]]): two of those at once could block every compute thread and freeze
   * the run (the write-up's deadlock), so they run afterwards, one at a time. The results come back in the
   * same order either way: by load shape, run, then approach.
   */
  def measureAll(s: Settings, each: Measurement => IO[Unit]): IO[Vector[Measurement]] =
    def measure(w: Workload, approaches: Vector[Approach]): IO[Vector[Measurement]] =
      (0 until s.runs).toVector.flatTraverse { r =>
        val plan = Plan.draw(w, s.seed, r)
        val producers = approaches.map(_.producers(w)).distinct
        val ideals = producers.map(p => p -> Ideal.of(plan, p).makespan).toMap
        val bounded = producers.filter(_ => w.bufferBelowBurst)
          .map(p => p -> BoundedIdeal.makespan(plan, p, w.buffer)).toMap
        approaches.traverse { a =>
          measureOne(s, plan, a, ideals(a.producers(w)), bounded.get(a.producers(w))).flatTap(each)
        }
      }
    if !s.parallel then s.workloads.flatTraverse(measure(_, s.approaches))
    else
      val (alone, sideBySide) = s.approaches.partition(_.blocksThreads)
      for
        together <- s.workloads.parFlatTraverse(measure(_, sideBySide))
        apart <- s.workloads.flatTraverse(measure(_, alone))
      yield inRunOrder(s, together ++ apart)

  /** @param boundedWorkloadMs the bounded ideal's makespan in the workload's ms, when it has one */
  def measureOne(
      s: Settings,
      plan: Plan,
      approach: Approach,
      idealWorkloadMs: Long,
      boundedWorkloadMs: Option[Long] = None
  ): IO[Measurement] =
    val w = plan.workload
    // the blocking demo always runs in real time; under the virtual clock it gets a tenth of the delays
    val scale = approach.placement match
      case Placement.FixedPool(_) if s.clock == Clock.Virtual => 0.1
      case _ => s.scale
    val bench = new Bench(plan, s.clock, scale, new Recorder(w.tasks, w.batches), s.orderedWindow)
    val idealMs = idealWorkloadMs * scale
    val limit = (s.clock, approach.placement) match
      case (Clock.Virtual, Placement.Shared) => (idealWorkloadMs * 100 + 1000).millis
      case _ => (idealMs * 10).millis.max(30.seconds)
    val longestDelay = (plan.produceMs ++ plan.consumeMs).max
    val stall = 1.second + (2 * longestDelay * scale).millis
    val live = Option.when(
      s.live && !s.parallel && s.clock == Clock.Real && approach.placement == Placement.Shared
    )(new LiveView())
    Measure(
      approach,
      bench,
      idealMs,
      boundedWorkloadMs.map(_ * scale),
      limit,
      stall,
      live,
      w.name,
      peaks = s.peaks && !s.parallel
    )

  private def progressLine(m: Measurement): String =
    val result = m.status match
      case Status.Ok =>
        f"${m.makespanMs}%.1f ms, ideal ${m.idealMs}%.1f ms, ratio ${m.ratio}%.3f, to own order ${m.ownOrderRatio}%.3f" +
          m.boundedIdealMs.fold("")(b => f", bounded ideal $b%.1f ms, ratio ${m.boundedRatio}%.3f")
      case Status.Failed(reason) => s"failed: $reason"
      case other => other.label
    f"  ${m.scenario}%-16s run ${m.run}%-2d ${m.approach}%-30s $result"

  private def header(s: Settings): String =
    val clock = s.clock match
      case Clock.Virtual => "virtual (TestControl)"
      case Clock.Real =>
        (if s.timeScale == 1.0 then "real" else s"real, delays × ${s.timeScale}") +
          (if s.parallel then ", load shapes side by side" else "")
    val window = s.orderedWindow.fold("")(w => s", ordered window $w")
    s"weir compare — clock: $clock, seed ${s.seed}, ${s.runs} run(s), JDK ${System.getProperty("java.version")}, " +
      s"${Runtime.getRuntime.availableProcessors} cores$window"

  final case class Options(
      clock: Option[Clock] = None,
      timeScale: Option[Double] = None,
      seed: Long = 0L,
      runs: Int = 1,
      scenarios: Seq[String] = Nil,
      approaches: Seq[String] = Nil,
      workload: Option[Path] = None,
      quick: Boolean = false,
      producers: Option[Int] = None,
      json: Option[Path] = None,
      report: Option[Path] = None,
      html: Option[Path] = None,
      live: Boolean = true,
      parallel: Boolean = false,
      orderedWindow: Option[Int] = None
  )

  private val builder = OParser.builder[Options]
  val parser: OParser[Unit, Options] =
    import builder.*
    OParser.sequence(
      programName("weir lab compare"),
      head(
        "weir lab compare",
        "— seed 000's experiment: every approach and weir, against the ideal schedule"
      ),
      help("help").text("print this help"),
      opt[String]("clock").valueName("real|virtual")
        .validate(c =>
          if c == "real" || c == "virtual" then success
          else failure(s"--clock must be real or virtual, was: $c")
        )
        .action((c, o) =>
          o.copy(clock = Some(if c == "virtual" then Clock.Virtual else Clock.Real))
        )
        .text(
          "real (default; virtual with --quick) or virtual: Cats Effect's TestControl, sleeps cost nothing, results exact"
        ),
      opt[Double]("time-scale").valueName("X")
        .validate(x =>
          if x > 0 && x <= 10 then success else failure(s"--time-scale must be in (0, 10], was: $x")
        )
        .action((x, o) => o.copy(timeScale = Some(x)))
        .text(
          "multiply every real delay by X, e.g. 0.1 for a quick look (default 1; 0.1 with --quick); real clock only"
        ),
      opt[Long]("seed").valueName("N").action((n, o) => o.copy(seed = n))
        .text("seed of the delays (default 0); run r of seed s always draws the same delays"),
      opt[Int]("runs").valueName("N")
        .validate(positive("--runs"))
        .action((n, o) => o.copy(runs = n))
        .text(
          "repeat each measurement N times (delays of run r drawn from seed and r); median, min, max (default 1)"
        ),
      opt[Seq[String]]("scenarios").valueName("a,b").action((s, o) => o.copy(scenarios = s))
        .text("only these load shapes (default: all)"),
      opt[Seq[String]]("approaches").valueName("a,b").action((s, o) => o.copy(approaches = s))
        .text(s"only these approaches (default: all): ${Approach.all.map(_.name).mkString(", ")}"),
      opt[String]("workload").valueName("FILE").action((f, o) =>
        o.copy(workload = Some(Paths.get(f)))
      )
        .text(
          "load shapes from a JSON workload file (default: the write-up's three; see docs/lab/compare.md)"
        ),
      opt[Unit]("quick").action((_, o) => o.copy(quick = true))
        .text(
          "the three shapes a tenth the size (100 tasks, batches of 10, 10 slots), on the virtual clock unless --clock real (then delays × 0.1)"
        ),
      opt[Int]("producers").valueName("N")
        .validate(positive("--producers"))
        .action((n, o) => o.copy(producers = Some(n)))
        .text("producers of the multi-producer approaches and weir (default 2)"),
      opt[String]("json").valueName("FILE").action((f, o) => o.copy(json = Some(Paths.get(f))))
        .text("also write one JSON record per (shape, approach, run) (default: none)"),
      opt[String]("report").valueName("DIR").action((f, o) => o.copy(report = Some(Paths.get(f))))
        .text(
          "also write every chart as a PNG into DIR, and index.html: the same page as --html (default: none)"
        ),
      opt[String]("html").valueName("FILE").action((f, o) => o.copy(html = Some(Paths.get(f))))
        .text(
          s"also write one self-contained HTML page (environment, tables, charts); rewritten every ${Durations.show(Settings().htmlEvery)} while the run goes, and reloaded by a browser open on it (default: none)"
        ),
      opt[Unit]("no-live").action((_, o) => o.copy(live = false))
        .text("do not draw the live P/C lines"),
      opt[Int]("ordered-window").valueName("W")
        .validate(positive("--ordered-window"))
        .action((n, o) => o.copy(orderedWindow = Some(n)))
        .text(
          "the ordered approaches may have W tasks started and not yet emitted, slots of them running (default: slots, fs2 3's parEvalMap)"
        ),
      opt[Unit]("parallel").action((_, o) => o.copy(parallel = true))
        .text("run the load shapes side by side (about 3x faster; no peak threads or heap, no live view)")
    )

  /** The compare options resolved: workloads loaded and filtered, names checked. */
  def settings(c: Options): Either[String, Settings] =
    val base = c.workload match
      case Some(path) => WorkloadFile.load(path)
      case None => Right(if c.quick then Workload.quick else Workload.defaults)
    for
      all <- base
      withProducers <-
        c.producers.fold(Right(all))(p => all.traverseEither(w => Workload.validate(w.copy(producers = p))))
      shapes <- pick(withProducers, c.scenarios, "--scenarios", "scenario", _.name)
      approaches <- pick(Approach.all, c.approaches, "--approaches", "approach", _.name)
      _ <- c.orderedWindow.fold(Right(()): Either[String, Unit]) { w =>
        val slots = shapes.map(_.slots).max
        Either.cond(w >= slots, (), s"--ordered-window must be >= the slots ($slots), was: $w")
      }
    yield Settings(
      clock = c.clock.getOrElse(if c.quick then Clock.Virtual else Clock.Real),
      timeScale = c.timeScale.getOrElse(if c.quick then 0.1 else 1.0),
      seed = c.seed,
      runs = c.runs,
      workloads = shapes,
      approaches = approaches,
      json = c.json,
      report = c.report,
      html = c.html,
      live = c.live && System.console() != null,
      parallel = c.parallel,
      orderedWindow = c.orderedWindow
    )

  private def pick[A](
      all: Vector[A],
      names: Seq[String],
      option: String,
      what: String,
      name: A => String
  ): Either[String, Vector[A]] =
    if names.isEmpty then Right(all)
    else
      names.find(n => !all.exists(a => name(a) == n)) match
        case Some(bad) => Left(s"$option: unknown $what '$bad' (known: ${all.map(name).mkString(", ")})")
        case None => Right(names.toVector.distinct.map(n => all.find(a => name(a) == n).get))

  extension [A](xs: Vector[A])
    private def traverseEither[B](f: A => Either[String, B]): Either[String, Vector[B]] =
      xs.foldLeft(Right(Vector.empty): Either[String, Vector[B]])((acc, a) =>
        acc.flatMap(v => f(a).map(v :+ _))
      )
