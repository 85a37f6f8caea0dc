package weir.cli

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import com.comcast.ip4s.{Host, Port}
import scopt.OParser
import weir.console.{ConsoleOptions, ReaderView, WeirConsole}
import weir.postgres.{Database, DatabaseConfig, Schema}

import scala.concurrent.duration.*

/**
 * `./weir console`: serves the web console of a schema's durable queues until interrupted, on
 * `--bind` (default 127.0.0.1: no other host can reach it unless asked) and `--port`, and prints its
 * address. Read-only unless `--admin-token` (or `WEIR_CONSOLE_TOKEN`, which keeps the secret out of the
 * process list) is given; an operator's login then lasts `--session-lifetime`, its cookie `Secure` over TLS
 * or with `--secure-cookie`, and `--trust-proxy` believes a reverse proxy's forwarded headers
 * ([[ConsoleOptions]] says what each one guards against).
 */
object ConsoleCli extends Command.Parsed[ConsoleCli.Options]:

  val words: List[String] = List("console")
  val summary: String = "serve the web console of a schema's durable queues until interrupted"
  val defaults: Options = Options()

  final case class Options(
      url: Option[String] = None,
      schema: String = Schema.default.name,
      bind: String = "127.0.0.1",
      port: Int = 8080,
      adminToken: Option[String] = None,
      countsEvery: FiniteDuration = ConsoleOptions.Defaults.countsEvery,
      sessionLifetime: FiniteDuration = ConsoleOptions.Defaults.sessionLifetime,
      secureCookie: Boolean = false,
      trustProxy: Boolean = false,
      readers: ReaderView = ReaderView.Full
  )

  private val builder = OParser.builder[Options]
  val parser: OParser[Unit, Options] =
    import builder.*
    OParser.sequence(
      programName("weir console"),
      head(s"weir console — $summary"),
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
      Durations.opt(builder, "counts-every")
        .validate(d =>
          if d <= 1.hour then success
          else failure(s"--counts-every must be at most 1h, was: ${Durations.show(d)}")
        )
        .action((d, o) => o.copy(countsEvery = d))
        .text(
          "how often the overview's counts are read again while it is viewed, one reading shared by every " +
            s"request in between (default ${Durations.show(ConsoleOptions.Defaults.countsEvery)}; 0s: every request reads them)"
        ),
      Durations.opt(builder, "session-lifetime")
        .validate(d =>
          if d >= 1.minute && d <= 30.days then success
          else failure(s"--session-lifetime must be in 1m..720h, was: ${Durations.show(d)}")
        )
        .action((d, o) => o.copy(sessionLifetime = d))
        .text(
          "how long an operator's login lasts: the session cookie's Max-Age " +
            s"(default ${Durations.show(ConsoleOptions.Defaults.sessionLifetime)}; 1m to 720h)"
        ),
      opt[Unit]("secure-cookie").action((_, o) => o.copy(secureCookie = true))
        .text(
          "mark the session cookie Secure even when the login did not come over TLS (default: only over TLS)"
        ),
      opt[Unit]("trust-proxy").action((_, o) => o.copy(trustProxy = true))
        .text(
          "believe X-Forwarded-For and X-Forwarded-Proto: only behind a reverse proxy of yours that sets them " +
            "(default: off)"
        ),
      opt[String]("readers").valueName("full|summary")
        .validate(r =>
          if readerViews.contains(r) then success
          else failure(s"--readers must be full or summary, was: '$r'")
        )
        .action((r, o) => o.copy(readers = readerViews(r)))
        .text(
          "what those who have not logged in see: full, or summary (no payload, header or error text) (default full)"
        )
    )

  private val readerViews: Map[String, ReaderView] =
    Map("full" -> ReaderView.Full, "summary" -> ReaderView.Summary)

  def execute(o: Options): IO[ExitCode] =
    DatabaseArgs.run(o.url, o.schema) { config =>
      val token = o.adminToken.orElse(sys.env.get("WEIR_CONSOLE_TOKEN").filter(_.nonEmpty))
      serve(
        o,
        config,
        ConsoleOptions(
          adminToken = token,
          readers = o.readers,
          countsEvery = o.countsEvery,
          sessionLifetime = o.sessionLifetime,
          secureCookie = o.secureCookie,
          trustProxy = o.trustProxy
        )
      )
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
