package weir.cli

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import scopt.OParser
import weir.postgres.{Cancel, Database, DatabaseConfig, QueueRate, Schema, TaskAdmin}

/**
 * `./weir durable <migrate|stats|queues|pause|resume|limit|cancel|schedules>`: weir-postgres's schema, its
 * queues' controls, a task's cancel and the schedules from the command line. The database comes from `--url` or `WEIR_DATABASE_URL`;
 * the schema from `--schema` (default `weir`).
 */
object DurableCli:

  final case class Options(
      command: String = "",
      url: Option[String] = None,
      schema: String = Schema.default.name,
      queue: String = "",
      maxRunning: Option[Option[Int]] = None,
      rate: Option[Option[Double]] = None,
      burst: Option[Int] = None,
      task: Long = 0L,
      reason: Option[String] = None
  )

  private val builder = OParser.builder[Options]
  val parser: OParser[Unit, Options] =
    import builder.*
    OParser.sequence(
      programName("weir durable"),
      head("weir durable — the PostgreSQL schema of weir's durable tasks"),
      help("help").text("print this help"),
      DatabaseArgs.options(builder)((o, u) => o.copy(url = Some(u)), (o, s) => o.copy(schema = s)),
      cmd(
        "migrate"
      ).action((_, o) => o.copy(command = "migrate")).text("create or upgrade the schema (idempotent)"),
      cmd("stats").action((_, o) => o.copy(command = "stats")).text("tasks per queue and state"),
      cmd("schedules")
        .action((_, o) => o.copy(command = "schedules"))
        .text("periodic tasks: each schedule's queue, timing, policy, last and next tick"),
      cmd("queues").action((_, o) => o.copy(command = "queues"))
        .text("every queue's controls (paused, limit on running tasks, rate) and running tasks"),
      cmd("pause").action((_, o) => o.copy(command = "pause"))
        .text("no worker claims the queue's tasks from now on; running ones finish")
        .children(queueArg),
      cmd("resume").action((_, o) => o.copy(command = "resume")).text("workers claim the queue's tasks again")
        .children(queueArg),
      cmd("limit").action((_, o) => o.copy(command = "limit"))
        .text("set or remove the queue's limits, shared by every worker; applied at the next claim")
        .children(
          queueArg,
          opt[Int]("max-running").valueName("N")
            .validate(n => if n > 0 then success else failure(s"--max-running must be > 0, was: $n"))
            .action((n, o) => o.copy(maxRunning = Some(Some(n))))
            .text("at most N of its tasks running at once across all workers"),
          opt[Unit]("no-max-running").action((_, o) => o.copy(maxRunning = Some(None)))
            .text("remove the limit on running tasks"),
          opt[Double]("rate").valueName("R")
            .validate(r =>
              if !r.isNaN && !r.isInfinite && r > 0 then success
              else failure(s"--rate must be a finite number > 0 (tasks per second), was: $r")
            )
            .action((r, o) => o.copy(rate = Some(Some(r))))
            .text("at most R of its tasks claimed per second across all workers"),
          opt[Int]("burst").valueName("B")
            .validate(b => if b > 0 then success else failure(s"--burst must be > 0, was: $b"))
            .action((b, o) => o.copy(burst = Some(b)))
            .text("with --rate: at most B claimed at once after a quiet spell (default: one second's worth)"),
          opt[Unit]("no-rate").action((_, o) => o.copy(rate = Some(None))).text("remove the rate")
        ),
      cmd("cancel").action((_, o) => o.copy(command = "cancel"))
        .text("cancel a task: a waiting one at once, a running one is interrupted by its worker")
        .children(
          arg[Long]("TASK").action((id, o) => o.copy(task = id)).text("the task's id"),
          opt[String]("reason").valueName("TEXT")
            .validate(r => if r.nonEmpty then success else failure("--reason must not be empty"))
            .action((r, o) => o.copy(reason = Some(r)))
            .text("kept among the task's errors (default: requested by an operator)")
        ),
      checkConfig(o =>
        if o.command.isEmpty then
          failure(
            "a command is required: migrate | stats | queues | pause | resume | limit | cancel | schedules"
          )
        else if o.command == "limit" && o.maxRunning.isEmpty && o.rate.isEmpty then
          failure("limit needs --max-running N, --no-max-running, --rate R or --no-rate")
        else if o.burst.isDefined && !o.rate.exists(_.isDefined) then failure("--burst needs --rate")
        else success
      )
    )

  private def queueArg =
    builder.arg[String]("QUEUE").action((q, o) => o.copy(queue = q)).text("the queue's name")

  def run(args: List[String]): IO[ExitCode] =
    CommandLine.runWithCode(parser, args, Options()) { o =>
      DatabaseArgs.run(o.url, o.schema)(execute(o, _))
    }

  private def execute(o: Options, config: DatabaseConfig): IO[ExitCode] =
    def admin[A](f: TaskAdmin[IO] => IO[A]): IO[A] = Database.connect[IO](config).use(db => f(TaskAdmin(db)))
    o.command match
      case "pause" => admin(_.pause(o.queue)) *> IO.println(s"queue ${o.queue}: paused").as(ExitCode.Success)
      case "resume" => admin(_.resume(o.queue)) *>
          IO.println(s"queue ${o.queue}: resumed").as(ExitCode.Success)
      case "limit" =>
        val rate = o.rate.map(_.map(r => QueueRate(r, o.burst.getOrElse(math.ceil(r).toInt.max(1)))))
        admin(a =>
          val change = (o.maxRunning, rate) match
            case (Some(max), Some(r)) => a.limits(o.queue, max, r)
            case _ => o.maxRunning.traverse_(a.limitRunning(o.queue, _)) *>
                rate.traverse_(a.limitRate(o.queue, _))
          change *> a.queues.map(_.find(_.name == o.queue))
        ).flatMap(info => IO.println(s"queue ${o.queue}: ${info.fold("?")(describe)}")).as(ExitCode.Success)
      case "queues" =>
        admin(_.queues).flatMap { queues =>
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
      case "cancel" =>
        admin(a => o.reason.fold(a.cancel(o.task))(a.cancel(o.task, _))).flatMap {
          case Cancel.Cancelled => IO.println(s"task ${o.task}: cancelled").as(ExitCode.Success)
          case Cancel.Requested =>
            IO.println(s"task ${o.task}: running; its worker is told to interrupt it").as(ExitCode.Success)
          case Cancel.Finished(state) =>
            IO.consoleForIO.errorln(
              s"Error: task ${o.task} has already finished (${state.name}): nothing changed"
            )
              .as(ExitCode(1))
          case Cancel.NotFound => IO.consoleForIO.errorln(s"Error: no task ${o.task}").as(ExitCode(1))
        }
      case "migrate" =>
        Database.migrate[IO](config).flatMap { applied =>
          IO.println(
            if applied.isEmpty then s"schema ${config.schema}: up to date"
            else s"schema ${config.schema}: applied migration(s) ${applied.mkString(", ")}"
          )
        }.as(ExitCode.Success)
      case "schedules" =>
        admin(_.schedules).flatMap { schedules =>
          val header = Vector("schedule", "queue", "timing", "missed", "last tick", "next tick", "ticks")
          val rows = schedules.map(s =>
            Vector(s.name, s.queue, s.timing.toString, s.missed.toString, s.lastTick.fold("-")(_.toString))
              ++ Vector(s.nextTick.toString, s.ticks.toString)
          )
          IO.println(if rows.isEmpty then "no schedules"
          else Table.grid(header +: rows, rightAligned = Set(6)))
        }.as(ExitCode.Success)
      case _ =>
        Database.connect[IO](config).use(db => TaskAdmin(db).stats).flatMap { stats =>
          val header = Vector("queue", "available", "scheduled", "running", "completed", "dead", "cancelled")
          val rows = stats.map(s =>
            Vector(s.queue) ++
              Vector(s.available, s.scheduled, s.running, s.completed, s.dead, s.cancelled).map(_.toString)
          )
          IO.println(if rows.isEmpty then "no tasks"
          else Table.grid(header +: rows, rightAligned = (1 to 6).toSet))
        }.as(ExitCode.Success)

  private def describe(q: weir.postgres.QueueInfo): String =
    val limits = Vector(
      q.maxRunning.map(n => s"at most $n running"),
      q.rate.map(r => s"at most ${r.perSecond} per second, bursts of ${r.burst}")
    ).flatten
    (if q.paused then "paused; " else "") + (if limits.isEmpty then "no limits" else limits.mkString(", ")) +
      s"; ${q.running} running"
