package weir.lab

import weir.cli.CommandLine
import scopt.OParser
import weir.cli.CommandLine.positive

/**
 * The lab's top-level commands (`example`, `soak`), parsed by scopt: unknown options and bad values are
 * refused with a message. The experiments (`lab <name>`, and `compare` as a shortcut of `lab compare`) have
 * their own parsers, listed from [[Experiments.all]].
 */
object Cli:

  enum Command:
    case Example(tasks: Int, limit: Int, otel: Option[Int])
    case Soak(tasks: Long, limit: Int, progress: Boolean, otel: Option[Int])

  final case class Options(
      command: Option[String] = None,
      tasks: Long = -1,
      limit: Int = 64,
      progress: Boolean = false,
      otel: Option[Int] = None
  )

  private val builder = OParser.builder[Options]
  private val parser =
    import builder.*
    OParser.sequence(
      programName("weir"),
      head("weir lab", "— task processing experiments on weir-core"),
      help("help").text("print this help"),
      cmd("example")
        .action((_, o) => o.copy(command = Some("example")))
        .text("run the README's example pipeline (two producers, a limit, dead letters, a drain)")
        .children(tasksOpt, limitOpt, otelOpt),
      cmd("soak")
        .action((_, o) => o.copy(command = Some("soak")))
        .text("push many lazily generated no-op tasks through weir and report time and heap")
        .children(
          tasksOpt,
          limitOpt,
          otelOpt,
          opt[Unit]("progress").action((_, o) => o.copy(progress = true)).text("show a progress bar")
        ),
      note("  lab <experiment> [options]   an experiment; `weir lab <experiment> --help` for its options:"),
      note(Experiments.all.map(e => s"    ${e.name.padTo(12, ' ')} ${e.summary}").mkString("\n")),
      note("  compare [options]            the same as `lab compare`"),
      note("  durable <migrate|stats>      weir-postgres's schema; `weir durable --help`"),
      note("  console --url URL            the web console of durable queues; `weir console --help`"),
      note("  train                        short runs for the launcher's ahead-of-time cache (JDK 25)\n"),
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

  private def otelOpt = builder
    .opt[Int]("otel")
    .valueName("PORT")
    .validate(p =>
      if p >= 1 && p <= 65535 then builder.success
      else builder.failure(s"--otel must be a port, 1 to 65535, was: $p")
    )
    .action((p, o) => o.copy(otel = Some(p)))
    .text("serve the run's OpenTelemetry metrics for Prometheus at http://127.0.0.1:PORT/metrics")

  /** The command, or None when scopt has already printed the error or the help. */
  def parse(args: Seq[String]): Option[Command] =
    OParser.parse(parser, args, Options()).flatMap { o =>
      o.command match
        case Some("example") =>
          Some(Command.Example(if o.tasks > 0 then o.tasks.toInt else 20000, o.limit, o.otel))
        case Some("soak") =>
          Some(Command.Soak(if o.tasks > 0 then o.tasks else 10_000_000L, o.limit, o.progress, o.otel))
        case _ => None
    }

  /** Parses without running or printing: `Left(why)` for an unknown command or option, or a bad value. */
  def check(args: Seq[String]): Either[String, Unit] =
    if args == Seq("--help") then Right(()) // scopt prints the usage before the check for a command
    else CommandLine.check(parser, args, Options())
