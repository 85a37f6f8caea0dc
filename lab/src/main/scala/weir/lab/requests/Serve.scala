package weir.lab.requests

import cats.effect.{ExitCode, IO}
import com.comcast.ip4s.Host
import scopt.{OEffect, OParser}
import weir.cli.{CommandLine, Durations}
import weir.cli.CommandLine.positive
import weir.lab.Experiment

import scala.concurrent.duration.*

/**
 * `./weir lab serve`: the delay server on its own, until interrupted. Its first line on standard output is
 * `listening on http://HOST:PORT` (the lab's embedded server in a child JVM reads the port from it).
 */
object Serve extends Experiment:
  val label = "serve"
  val summary = "seed 002's delay server: GET /{id} answers id after a delay fixed by (seed, id); GET /stats"

  final case class Options(
      host: String = "127.0.0.1",
      port: Int = 8000,
      maxDelayMs: Long = 3000,
      seed: Long = 0L,
      maxConnections: Int = 16384,
      idleTimeout: FiniteDuration = 60.seconds,
      headerTimeout: FiniteDuration = 10.seconds
  )

  private val builder = OParser.builder[Options]
  val parser: OParser[Unit, Options] =
    import builder.*
    OParser.sequence(
      programName("weir lab serve"),
      head("weir lab serve", "— a delay server for ./weir lab requests (http4s Ember)"),
      help("help").text("print this help"),
      opt[String]("bind").valueName("HOST")
        .validate(h =>
          if Host.fromString(h).isDefined then success else failure(s"--bind must be an address, was: $h")
        )
        .action((h, o) => o.copy(host = h))
        .text("address to listen on (default 127.0.0.1: loopback only)"),
      opt[Int]("port").valueName("PORT")
        .validate(p =>
          if p >= 0 && p <= 65535 then success else failure(s"--port must be in [0, 65535], was: $p")
        )
        .action((p, o) => o.copy(port = p))
        .text("port (default 8000; 0 picks a free one)"),
      Durations.opt(builder, "max-delay").validate(Durations.positive("--max-delay"))
        .validate(Durations.wholeMillis("--max-delay"))
        .action((d, o) => o.copy(maxDelayMs = d.toMillis))
        .text(
          s"delays are uniform on [0, max), in whole ms (default ${Durations.show(Options().maxDelayMs.millis)})"
        ),
      opt[Long]("seed").valueName("N").action((s, o) => o.copy(seed = s))
        .text("seed of the delays (default 0): request id i always waits delay(seed, i)"),
      opt[Int]("max-connections").valueName("N")
        .validate(positive("--max-connections"))
        .action((n, o) => o.copy(maxConnections = n))
        .text("open connections at most (default 16384; the process's file limit is the real cap)"),
      Durations.opt(builder, "idle-timeout")
        .action((t, o) => o.copy(idleTimeout = t))
        .text(
          s"close a connection idle (or stuck in a read or write) this long; 0s: never (default ${Durations.show(Options().idleTimeout)})"
        ),
      Durations.opt(builder, "header-timeout")
        .action((t, o) => o.copy(headerTimeout = t))
        .text(
          s"a request's line and headers must arrive within this; 0s: no limit (default ${Durations.show(Options().headerTimeout)})"
        )
    )

  /** `d`, a zero meaning no timeout. */
  def timeout(d: FiniteDuration): Duration = if d == Duration.Zero then Duration.Inf else d

  /** The options, if `args` are valid (for tests). */
  def parse(args: Seq[String]): Option[Options] =
    CommandLine.parse(parser, args, Options()) match
      case CommandLine.Parsed.Ok(o) => Some(o)
      case _ => None

  /** The parse and its error messages, without printing them (for tests). */
  def errors(args: Seq[String]): (Option[Options], List[String]) =
    val (parsed, effects) = OParser.runParser(parser, args, Options())
    (parsed, effects.collect { case OEffect.ReportError(message) => message })

  def config(o: Options): DelayServer.Config =
    DelayServer.Config(
      Host.fromString(o.host).get,
      o.port,
      o.maxDelayMs,
      o.seed,
      o.maxConnections,
      idleTimeout = timeout(o.idleTimeout),
      headerTimeout = timeout(o.headerTimeout)
    )

  def check(args: List[String]): Either[String, Unit] = CommandLine.check(parser, args, Options())

  def run(args: List[String]): IO[ExitCode] =
    CommandLine.runWithCode(parser, args, Options()) { o =>
      DelayServer.resource(config(o)).use { server =>
        IO.println(s"listening on http://${o.host}:${server.port}") *>
          IO.println(
            s"GET /{id} waits delay(seed ${o.seed}, id) in [0, ${o.maxDelayMs}) ms; GET /stats; Ctrl-C stops"
          ) *> IO.never
      }
    }
