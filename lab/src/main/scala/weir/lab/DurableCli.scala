package weir.lab

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import scopt.OParser
import weir.lab.report.{ExperimentIo, Table}
import weir.postgres.{Database, DatabaseConfig, Schema, TaskAdmin}

/**
 * `./weir durable <migrate|stats|schedules>`: weir-postgres's schema from the command line. The database comes from
 * `--url` or `WEIR_DATABASE_URL`; the schema from `--schema` (default `weir`).
 */
object DurableCli:

  final case class Options(
      command: String = "",
      url: Option[String] = None,
      schema: String = Schema.default.name
  )

  private val builder = OParser.builder[Options]
  val parser: OParser[Unit, Options] =
    import builder.*
    OParser.sequence(
      programName("weir durable"),
      head("weir durable — the PostgreSQL schema of weir's durable tasks"),
      help("help").text("print this help"),
      opt[String]("url").valueName("URL")
        .action((u, o) => o.copy(url = Some(u)))
        .text("postgresql://user:password@host:5432/db or jdbc:postgresql://… (default: $WEIR_DATABASE_URL)"),
      opt[String]("schema").valueName("NAME")
        .validate(s =>
          Either.catchOnly[IllegalArgumentException](
            Schema(s)
          ).leftMap(_.getMessage.stripPrefix("requirement failed: ")).void
        )
        .action((s, o) => o.copy(schema = s))
        .text("the schema that holds weir's tables (default weir)"),
      cmd(
        "migrate"
      ).action((_, o) => o.copy(command = "migrate")).text("create or upgrade the schema (idempotent)"),
      cmd("stats").action((_, o) => o.copy(command = "stats")).text("tasks per queue and state"),
      cmd("schedules")
        .action((_, o) => o.copy(command = "schedules"))
        .text("periodic tasks: each schedule's queue, timing, policy, last and next tick"),
      checkConfig(o =>
        if o.command.isEmpty then failure("a command is required: migrate | stats | schedules") else success
      )
    )

  def run(args: List[String]): IO[ExitCode] =
    ExperimentIo.runWithCode(parser, args, Options()) { o =>
      o.url.orElse(sys.env.get("WEIR_DATABASE_URL").filter(_.nonEmpty)) match
        case None =>
          IO.consoleForIO.errorln("Error: no database: give --url or set WEIR_DATABASE_URL").as(ExitCode(2))
        case Some(url) =>
          execute(o.command, DatabaseConfig(url, schema = Schema(o.schema))).handleErrorWith(e =>
            IO.consoleForIO.errorln(s"Error: ${e.getMessage}").as(ExitCode(1))
          )
    }

  private def execute(command: String, config: DatabaseConfig): IO[ExitCode] =
    command match
      case "migrate" =>
        Database.migrate[IO](config).flatMap { applied =>
          IO.println(
            if applied.isEmpty then s"schema ${config.schema}: up to date"
            else s"schema ${config.schema}: applied migration(s) ${applied.mkString(", ")}"
          )
        }.as(ExitCode.Success)
      case "schedules" =>
        Database.connect[IO](config).use(db => TaskAdmin(db).schedules).flatMap { schedules =>
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
