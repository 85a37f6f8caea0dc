package weir.cli

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import com.comcast.ip4s.{Host, Port}
import scopt.OParser
import weir.console.{ConsoleOptions, WeirConsole}
import weir.postgres.{Database, DatabaseConfig, Schema}

import scala.concurrent.duration.*

/**
 * `./weir console`: serves the web console of a schema's durable queues until interrupted, on
 * `--bind` (default 127.0.0.1: no other host can reach it unless asked) and `--port`, and prints its
 * address. Read-only unless `--admin-token` (or `WEIR_CONSOLE_TOKEN`, which keeps the secret out of the
 * process list) is given.
 */
object ConsoleCli:

  final case class Options(
      url: Option[String] = None,
      schema: String = Schema.default.name,
      bind: String = "127.0.0.1",
      port: Int = 8080,
      adminToken: Option[String] = None,
      countsEvery: FiniteDuration = ConsoleOptions.Defaults.countsEvery
  )

  private val builder = OParser.builder[Options]
  val parser: OParser[Unit, Options] =
    import builder.*
    OParser.sequence(
      programName("weir console"),
      head("weir console — a web console for weir-postgres's durable queues"),
      help("help").text("print this help"),
      DatabaseArgs.options(builder)((o, u) => o.copy(url = Some(u)), (o, s) => o.copy(schema = s)),
      opt[String]("bind").valueName("HOST")
        .validate(h =>
          Host.fromString(h).toRight(s"--bind must be a host name or IP address, was: '$h'").void
        )
        .action((h, o) => o.copy(bind = h))
        .text("the address to listen on (default 127.0.0.1; 0.0.0.0 serves every host)"),
      opt[Int]("port").valueName("PORT")
        .validate(p => Port.fromInt(p).toRight(s"--port must be in 0..65535, was: $p").void)
        .action((p, o) => o.copy(port = p))
        .text("the port to listen on (default 8080; 0 picks a free one)"),
      opt[String]("admin-token").valueName("SECRET")
        .validate(t =>
          if t.length >= 8 then success else failure("--admin-token must have at least 8 characters")
        )
        .action((t, o) => o.copy(adminToken = Some(t)))
        .text("lets an operator who logs in with it act (default: $WEIR_CONSOLE_TOKEN; none: read-only)"),
      opt[Double]("counts-every").valueName("SECONDS")
        .validate(s =>
          if s >= 0 && s <= 3600 then success
          else failure(s"--counts-every must be in 0..3600 seconds, was: $s")
        )
        .action((s, o) => o.copy(countsEvery = (s * 1000).round.millis))
        .text(
          "how often the overview's counts are read again while it is viewed, one reading shared by every " +
            "request in between (default 2; 0: every request reads them)"
        )
    )

  def run(args: List[String]): IO[ExitCode] =
    CommandLine.runWithCode(parser, args, Options()) { o =>
      DatabaseArgs.run(o.url, o.schema) { config =>
        val token = o.adminToken.orElse(sys.env.get("WEIR_CONSOLE_TOKEN").filter(_.nonEmpty))
        serve(o, config, ConsoleOptions(adminToken = token, countsEvery = o.countsEvery))
      }
    }

  private def serve(o: Options, config: DatabaseConfig, options: ConsoleOptions): IO[ExitCode] =
    val host = Host.fromString(o.bind).getOrElse(Host.fromString("127.0.0.1").get)
    val port = Port.fromInt(o.port).getOrElse(Port.fromInt(8080).get)
    Database.connect[IO](config).flatMap(WeirConsole.server(_, options, host, port)).use { server =>
      val access = if options.writable then "actions need the admin token" else "read-only"
      IO.println(
        s"weir console: http://${server.addressIp4s} (schema ${config.schema}, $access); Ctrl-C stops it"
      ) *>
        IO.never
    }
