package weir.cli

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import scopt.OParser
import weir.postgres.{Database, DatabaseConfig, Operator, QueueInfo, QueueRate, Schema, TaskAdmin}

/**
 * `./weir durable <command>`: weir-postgres's schema, its queues' controls, a task's cancel, workflows and
 * batches ([[DurableGroups]]) and the schedules from the command line, one [[Command]] each. The database
 * comes from `--url` or `WEIR_DATABASE_URL`; the schema from `--schema` (default `weir`). A command that acts
 * (pause, resume, limit, cancel, a workflow's or batch's cancel) is recorded in the audit log as `--as`'s, by
 * default the OS user's ([[operator]]), in the session `cli`.
 */
object DurableCli:

  /** Every durable command's options; each command's parser sets the ones it takes. */
  final case class Options(
      url: Option[String] = None,
      schema: String = Schema.default.name,
      queue: String = "",
      maxRunning: Option[Option[Int]] = None,
      rate: Option[Option[Double]] = None,
      burst: Option[Int] = None,
      task: Long = 0L,
      reason: Option[String] = None,
      cancel: Boolean = false,
      first: Int = 500,
      after: Long = 0L,
      as: Option[String] = None
  )

  /** The durable commands, in the order `./weir durable --help` lists them. */
  val commands: Vector[Command] =
    Vector(
      Migrate,
      Stats,
      Queues,
      Pause,
      Resume,
      Limit,
      Cancel,
      DurableGroups.Workflow,
      DurableGroups.Batch
    ) :+
      Schedules

  private[cli] val builder = OParser.builder[Options]

  /** A durable command: `--url` and `--schema`, its own options, then what it does on the database. */
  private[cli] abstract class DurableCommand(word: String, val summary: String)
      extends Command.Parsed[Options]:
    val words: List[String] = List("durable", word)
    val defaults: Options = Options()

    /** Its own arguments and options, after the shared ones. */
    protected def own: List[OParser[?, Options]] = Nil

    /** Its checks of the whole command line. */
    protected def valid(o: Options): Either[String, Unit] = { val _ = o; Right(()) }

    lazy val parser: OParser[Unit, Options] =
      import builder.*
      val shared = List(
        head(s"weir $name — $summary"),
        help("help").text("print this help"),
        DatabaseArgs.options(builder)((o, u) => o.copy(url = Some(u)), (o, s) => o.copy(schema = s))
      )
      OParser.sequence(programName(s"weir $name"), shared ++ own ++ List(checkConfig(valid))*)

    def execute(o: Options): IO[ExitCode] = DatabaseArgs.run(o.url, o.schema)(act(o, _))

    protected def act(o: Options, config: DatabaseConfig): IO[ExitCode]

  private[cli] def admin[A](config: DatabaseConfig)(f: TaskAdmin[IO] => IO[A]): IO[A] =
    Database.connect[IO](config).use(db => f(TaskAdmin(db)))

  /** [[admin]] for a command that acts: its actions recorded as [[operator]]'s. */
  private[cli] def acting[A](o: Options, config: DatabaseConfig)(f: TaskAdmin[IO] => IO[A]): IO[A] =
    admin(config)(a => f(a.as(operator(o))))

  /** Who a command that acts is in the audit log: `--as NAME`, or else the OS user, in the session `cli`. */
  private[cli] def operator(o: Options): Operator =
    Operator(o.as.getOrElse(sys.props.get("user.name").filter(_.trim.nonEmpty).getOrElse("cli")), Some("cli"))

  /** `--as NAME`, of the commands that act. */
  private[cli] def asOption: OParser[String, Options] =
    builder.opt[String]("as").valueName("NAME")
      .validate(n => Operator(n).errors.headOption.fold(builder.success)(e => builder.failure(s"--as: $e")))
      .action((n, o) => o.copy(as = Some(n)))
      .text("who acts, as the audit log records it (default: the OS user)")

  private def queueArg =
    builder.arg[String]("QUEUE").action((q, o) => o.copy(queue = q)).text("the queue's name")

  private object Migrate extends DurableCommand("migrate", "create or upgrade the schema (idempotent)"):
    protected def act(o: Options, config: DatabaseConfig): IO[ExitCode] =
      Database.migrate[IO](config).flatMap { applied =>
        IO.println(
          if applied.isEmpty then s"schema ${config.schema}: up to date"
          else s"schema ${config.schema}: applied migration(s) ${applied.mkString(", ")}"
        )
      }.as(ExitCode.Success)

  private object Stats extends DurableCommand("stats", "tasks per queue and state"):
    protected def act(o: Options, config: DatabaseConfig): IO[ExitCode] =
      admin(config)(_.overview.stats).flatMap { stats =>
        val header = Vector("queue", "available", "scheduled", "running", "completed", "dead", "cancelled")
        val rows = stats.map(s =>
          Vector(s.queue) ++
            Vector(s.available, s.scheduled, s.running, s.completed, s.dead, s.cancelled).map(_.toString)
        )
        IO.println(if rows.isEmpty then "no tasks"
        else Table.grid(header +: rows, rightAligned = (1 to 6).toSet))
      }.as(ExitCode.Success)

  private object Queues
      extends DurableCommand(
        "queues",
        "every queue's controls (paused, limit on running tasks, rate) and running tasks"
      ):
    protected def act(o: Options, config: DatabaseConfig): IO[ExitCode] =
      admin(config)(_.overview.queues).flatMap { queues =>
        val header = Vector("queue", "paused", "max running", "rate /s", "burst", "running")
        val rows = queues.map(q =>
          Vector(
            q.name,
            if q.paused then "yes" else "no",
            q.maxRunning.fold("-")(_.toString),
            q.rate.fold("-")(r => BigDecimal(r.perSecond).bigDecimal.stripTrailingZeros.toPlainString),
            q.rate.fold("-")(_.burst.toString),
            q.running.toString
          )
        )
        IO.println(if rows.isEmpty then "no queues"
        else Table.grid(header +: rows, rightAligned = Set(2, 3, 4, 5)))
      }.as(ExitCode.Success)

  private object Pause
      extends DurableCommand("pause", "no worker claims the queue's tasks from now on; running ones finish"):
    override protected def own = List(queueArg, asOption)
    protected def act(o: Options, config: DatabaseConfig): IO[ExitCode] =
      acting(o, config)(_.queues.pause(o.queue)) *>
        IO.println(s"queue ${o.queue}: paused").as(ExitCode.Success)

  private object Resume extends DurableCommand("resume", "workers claim the queue's tasks again"):
    override protected def own = List(queueArg, asOption)
    protected def act(o: Options, config: DatabaseConfig): IO[ExitCode] =
      acting(o, config)(_.queues.resume(o.queue)) *>
        IO.println(s"queue ${o.queue}: resumed").as(ExitCode.Success)

  private object Limit
      extends DurableCommand(
        "limit",
        "set or remove the queue's limits, shared by every worker; applied at the next claim"
      ):
    override protected def own =
      import builder.*
      List(
        queueArg,
        opt[Int]("max-running").valueName("N")
          .validate(n => if n > 0 then success else failure(s"--max-running must be > 0, was: $n"))
          .action((n, o) => o.copy(maxRunning = Some(Some(n))))
          .text("at most N of its tasks running at once across all workers (default: unchanged)"),
        opt[Unit]("no-max-running").action((_, o) => o.copy(maxRunning = Some(None)))
          .text("remove the limit on running tasks"),
        opt[Double]("rate").valueName("R")
          .validate(r =>
            if !r.isNaN && !r.isInfinite && r > 0 then success
            else failure(s"--rate must be a finite number > 0 (tasks per second), was: $r")
          )
          .action((r, o) => o.copy(rate = Some(Some(r))))
          .text("at most R of its tasks claimed per second across all workers (default: unchanged)"),
        opt[Int]("burst").valueName("N")
          .validate(b => if b > 0 then success else failure(s"--burst must be > 0, was: $b"))
          .action((b, o) => o.copy(burst = Some(b)))
          .text("with --rate: at most N claimed at once after a quiet spell (default: one second's worth)"),
        opt[Unit]("no-rate").action((_, o) => o.copy(rate = Some(None))).text("remove the rate"),
        asOption
      )

    override protected def valid(o: Options): Either[String, Unit] =
      if o.maxRunning.isEmpty && o.rate.isEmpty then
        Left("limit needs --max-running N, --no-max-running, --rate R or --no-rate")
      else if o.burst.isDefined && !o.rate.exists(_.isDefined) then Left("--burst needs --rate")
      else Right(())

    protected def act(o: Options, config: DatabaseConfig): IO[ExitCode] =
      val rate = o.rate.map(_.map(r => QueueRate(r, o.burst.getOrElse(math.ceil(r).toInt.max(1)))))
      acting(o, config) { a =>
        val change = (o.maxRunning, rate) match
          case (Some(max), Some(r)) => a.queues.limits(o.queue, max, r)
          case _ => o.maxRunning.traverse_(a.queues.limitRunning(o.queue, _)) *>
              rate.traverse_(a.queues.limitRate(o.queue, _))
        change *> a.overview.queues.map(_.find(_.name == o.queue))
      }.flatMap(info => IO.println(s"queue ${o.queue}: ${info.fold("?")(describe)}")).as(ExitCode.Success)

  private object Cancel
      extends DurableCommand(
        "cancel",
        "cancel a task: a waiting one at once, a running one is interrupted by its worker"
      ):
    override protected def own =
      import builder.*
      List(
        arg[Long]("TASK").action((id, o) => o.copy(task = id)).text("the task's id"),
        opt[String]("reason").valueName("TEXT")
          .validate(r => if r.nonEmpty then success else failure("--reason must not be empty"))
          .action((r, o) => o.copy(reason = Some(r)))
          .text("kept among the task's errors (default: requested by the operator --as names)"),
        asOption
      )

    protected def act(o: Options, config: DatabaseConfig): IO[ExitCode] =
      acting(o, config)(a => o.reason.fold(a.tasks.cancel(o.task))(a.tasks.cancel(o.task, _))).flatMap {
        case weir.postgres.Cancel.Cancelled => IO.println(s"task ${o.task}: cancelled").as(ExitCode.Success)
        case weir.postgres.Cancel.Requested =>
          IO.println(s"task ${o.task}: running; its worker is told to interrupt it").as(ExitCode.Success)
        case weir.postgres.Cancel.Finished(state) =>
          IO.consoleForIO.errorln(
            s"Error: task ${o.task} has already finished (${state.name}): nothing changed"
          )
            .as(ExitCode(1))
        case weir.postgres.Cancel.NotFound =>
          IO.consoleForIO.errorln(s"Error: no task ${o.task}").as(ExitCode(1))
      }

  private object Schedules
      extends DurableCommand(
        "schedules",
        "periodic tasks: each schedule's queue, timing, policy, last and next tick"
      ):
    protected def act(o: Options, config: DatabaseConfig): IO[ExitCode] =
      admin(config)(_.overview.schedules).flatMap { schedules =>
        val header = Vector("schedule", "queue", "timing", "missed", "last tick", "next tick", "ticks")
        val rows = schedules.map(s =>
          Vector(s.name, s.queue, s.timing.toString, s.missed.toString, s.lastTick.fold("-")(_.toString))
            ++ Vector(s.nextTick.toString, s.ticks.toString)
        )
        IO.println(if rows.isEmpty then "no schedules" else Table.grid(header +: rows, rightAligned = Set(6)))
      }.as(ExitCode.Success)

  private def describe(q: QueueInfo): String =
    val limits = Vector(
      q.maxRunning.map(n => s"at most $n running"),
      q.rate.map(r => s"at most ${r.perSecond} per second, bursts of ${r.burst}")
    ).flatten
    (if q.paused then "paused; " else "") + (if limits.isEmpty then "no limits" else limits.mkString(", ")) +
      s"; ${q.running} running"
