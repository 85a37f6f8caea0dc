package weir.lab

import scopt.OParser
import weir.lab.approaches.{Approach, Clock}
import weir.lab.scenarios.{Workload, WorkloadFile}
import weir.lab.report.ExperimentIo
import weir.lab.report.ExperimentIo.positive

import java.nio.file.{Path, Paths}

/** The lab's command line, parsed by scopt: unknown options and bad values are refused with a message. */
object Cli:

  enum Command:
    case Example(tasks: Int, limit: Int)
    case Soak(tasks: Long, limit: Int, progress: Boolean)
    case Compare(settings: weir.lab.Compare.Settings)

  final case class CompareOptions(
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
      live: Boolean = true,
      parallel: Boolean = false
  )

  final case class Options(
      command: Option[String] = None,
      tasks: Long = -1,
      limit: Int = 64,
      progress: Boolean = false,
      compare: CompareOptions = CompareOptions()
  )

  private val builder = OParser.builder[Options]
  private val parser =
    import builder.*
    def cmp(f: CompareOptions => CompareOptions): Options => Options = o => o.copy(compare = f(o.compare))
    OParser.sequence(
      programName("weir"),
      head("weir lab", "— task processing experiments on weir-core"),
      help("help").text("print this help"),
      cmd("example")
        .action((_, o) => o.copy(command = Some("example")))
        .text("run the README's example pipeline (two producers, a limit, dead letters, a drain)")
        .children(tasksOpt, limitOpt),
      cmd("soak")
        .action((_, o) => o.copy(command = Some("soak")))
        .text("push many lazily generated no-op tasks through weir and report time and heap")
        .children(
          tasksOpt,
          limitOpt,
          opt[Unit]("progress").action((_, o) => o.copy(progress = true)).text("show a progress bar")
        ),
      note("  lab <experiment> [options]   the other experiments; `weir lab --help` lists them"),
      note("  durable <migrate|stats>      weir-postgres's schema; `weir durable --help`\n"),
      cmd("compare")
        .action((_, o) => o.copy(command = Some("compare")))
        .text("seed 000's experiment: every task-processing approach and weir, against the ideal schedule")
        .children(
          opt[String]("clock").valueName("real|virtual")
            .validate(c =>
              if c == "real" || c == "virtual" then success
              else failure(s"--clock must be real or virtual, was: $c")
            )
            .action((c, o) =>
              cmp(_.copy(clock = Some(if c == "virtual" then Clock.Virtual else Clock.Real)))(o)
            )
            .text(
              "real (default; virtual with --quick) or virtual: Cats Effect's TestControl, sleeps cost nothing, results exact"
            ),
          opt[Double]("time-scale").valueName("X")
            .validate(x =>
              if x > 0 && x <= 10 then success else failure(s"--time-scale must be in (0, 10], was: $x")
            )
            .action((x, o) => cmp(_.copy(timeScale = Some(x)))(o))
            .text("multiply every real delay by X (e.g. 0.1 for a quick look); real clock only"),
          opt[Long]("seed").valueName("N").action((n, o) => cmp(_.copy(seed = n))(o))
            .text("seed of the delays (default 0); run r of seed s always draws the same delays"),
          opt[Int]("runs").valueName("N")
            .validate(positive("--runs"))
            .action((n, o) => cmp(_.copy(runs = n))(o))
            .text(
              "repeat each measurement N times (delays of run r drawn from seed and r); median, min, max"
            ),
          opt[Seq[String]]("scenarios").valueName("a,b").action((s, o) => cmp(_.copy(scenarios = s))(o))
            .text("only these load shapes (default: all)"),
          opt[Seq[String]]("approaches").valueName("a,b").action((s, o) => cmp(_.copy(approaches = s))(o))
            .text(s"only these approaches (default: all): ${Approach.all.map(_.name).mkString(", ")}"),
          opt[String]("workload").valueName("FILE").action((f, o) =>
            cmp(_.copy(workload = Some(Paths.get(f))))(o)
          )
            .text(
              "load shapes from a JSON workload file instead of the write-up's three (see docs/lab/compare.md)"
            ),
          opt[Unit]("quick").action((_, o) => cmp(_.copy(quick = true))(o))
            .text(
              "the three shapes a tenth the size (100 tasks, batches of 10, 10 slots), on the virtual clock unless --clock real (then delays × 0.1)"
            ),
          opt[Int]("producers").valueName("N")
            .validate(positive("--producers"))
            .action((n, o) => cmp(_.copy(producers = Some(n)))(o))
            .text("producers of the multi-producer approaches and weir (default 2)"),
          opt[String]("json").valueName("FILE").action((f, o) => cmp(_.copy(json = Some(Paths.get(f))))(o))
            .text("also write one JSON record per (shape, approach, run)"),
          opt[String]("report").valueName("DIR").action((f, o) => cmp(_.copy(report = Some(Paths.get(f))))(o))
            .text("also write charts (PNG) and index.html into DIR"),
          opt[Unit]("no-live").action((_, o) => cmp(_.copy(live = false))(o))
            .text("do not draw the live P/C lines"),
          opt[Unit]("parallel").action((_, o) => cmp(_.copy(parallel = true))(o))
            .text("run the load shapes side by side (about 3x faster; no peak threads or heap, no live view)")
        ),
      checkConfig(o =>
        if o.command.isEmpty then
          failure("a command is required: example | soak | compare | lab <experiment>")
        else success
      )
    )

  private def tasksOpt = builder
    .opt[Long]("tasks")
    .valueName("N")
    .validate(positive("--tasks"))
    .action((n, o) => o.copy(tasks = n))
    .text("number of tasks")

  private def limitOpt = builder
    .opt[Int]("limit")
    .valueName("N")
    .validate(positive("--limit"))
    .action((n, o) => o.copy(limit = n))
    .text("concurrency limit (default 64)")

  /** The command, or None when scopt has already printed the error or the help. */
  def parse(args: Seq[String]): Option[Command] =
    OParser.parse(parser, args, Options()).flatMap { o =>
      o.command match
        case Some("example") => Some(Command.Example(if o.tasks > 0 then o.tasks.toInt else 20000, o.limit))
        case Some("soak") =>
          Some(Command.Soak(if o.tasks > 0 then o.tasks else 10_000_000L, o.limit, o.progress))
        case Some("compare") =>
          compareSettings(o.compare) match
            case Right(s) => Some(Command.Compare(s))
            case Left(error) =>
              System.err.println(s"Error: $error")
              None
        case _ => None
    }

  /**
   * Parses without running or printing: `Left(why)` for an unknown command or option, a bad value, or an
   * unknown scenario or approach. A `--workload` file is not read (its path may be relative to another
   * directory); the command line naming it is still checked.
   */
  def check(args: Seq[String]): Either[String, Unit] =
    if args == Seq("--help") then Right(()) // scopt prints the usage before the check for a command
    else checkCommand(args)

  private def checkCommand(args: Seq[String]): Either[String, Unit] =
    ExperimentIo.parse(parser, args, Options()) match
      case ExperimentIo.Parsed.Bad(error) => Left(error)
      case ExperimentIo.Parsed.Help(_) => Right(())
      case ExperimentIo.Parsed.Ok(o) =>
        if o.command.contains("compare") && o.compare.workload.isEmpty then
          compareSettings(o.compare).map(_ => ())
        else Right(())

  /** The compare options resolved: workloads loaded and filtered, names checked. */
  def compareSettings(c: CompareOptions): Either[String, weir.lab.Compare.Settings] =
    val base = c.workload match
      case Some(path) => WorkloadFile.load(path)
      case None => Right(if c.quick then Workload.quick else Workload.defaults)
    for
      all <- base
      withProducers <-
        c.producers.fold(Right(all))(p => all.traverseEither(w => Workload.validate(w.copy(producers = p))))
      shapes <- pick(withProducers, c.scenarios, "scenario", _.name)
      approaches <- pick(Approach.all, c.approaches, "approach", _.name)
    yield weir.lab.Compare.Settings(
      clock = c.clock.getOrElse(if c.quick then Clock.Virtual else Clock.Real),
      timeScale = c.timeScale.getOrElse(if c.quick then 0.1 else 1.0),
      seed = c.seed,
      runs = c.runs,
      workloads = shapes,
      approaches = approaches,
      json = c.json,
      report = c.report,
      live = c.live && System.console() != null,
      parallel = c.parallel
    )

  private def pick[A](
      all: Vector[A],
      names: Seq[String],
      what: String,
      name: A => String
  ): Either[String, Vector[A]] =
    if names.isEmpty then Right(all)
    else
      names.find(n => !all.exists(a => name(a) == n)) match
        case Some(bad) => Left(s"unknown $what '$bad' (known: ${all.map(name).mkString(", ")})")
        case None => Right(names.toVector.distinct.map(n => all.find(a => name(a) == n).get))

  extension [A](xs: Vector[A])
    private def traverseEither[B](f: A => Either[String, B]): Either[String, Vector[B]] =
      xs.foldLeft(Right(Vector.empty): Either[String, Vector[B]])((acc, a) =>
        acc.flatMap(v => f(a).map(v :+ _))
      )
