package weir.lab.requests

import weir.cli.CommandLine
import cats.effect.{ExitCode, IO}
import com.comcast.ip4s.Host
import scopt.{OEffect, OParser}
import weir.lab.Experiment
import weir.cli.CommandLine.{positive, positiveMillis}

import scala.concurrent.duration.*

/**
 * `./weir lab serve`: the delay server on its own, until interrupted. Its first line on standard output is
 * `listening on http://HOST:PORT` (the lab's embedded server in a child JVM reads the port from it).
 */
object Serve extends Experiment:
  val name = "serve"
  val summary = "seed 002's delay server: GET /{id} answers id after a delay fixed by (seed, id); GET /stats"

  final case class Options(
      host: String = "127.0.0.1",
      port: Int = 8000,
      maxDelayMs: Long = 3000,
      seed: Long = 0L,
      maxConnections: Int = 16384,
      idleTimeoutS: Long = 60,
      headerTimeoutS: Long = 10
  )

  private val builder = OParser.builder[Options]
  private val parser =
    import builder.*
    OParser.sequence(
      programName("weir lab serve"),
      head("weir lab serve", "— a delay server for ./weir lab requests (http4s Ember)"),
      help("help").text("print this help"),
      opt[String]("host").valueName("ADDRESS")
        .validate(h =>
          if Host.fromString(h).isDefined then success else failure(s"--host must be an address, was: $h")
        )
        .action((h, o) => o.copy(host = h))
        .text("address to listen on (default 127.0.0.1: loopback only)"),
      opt[Int]("port").valueName("N")
        .validate(p =>
          if p >= 0 && p <= 65535 then success else failure(s"--port must be in [0, 65535], was: $p")
        )
        .action((p, o) => o.copy(port = p))
        .text("port (default 8000; 0 picks a free one)"),
      opt[Long]("max-delay").valueName("MS")
        .validate(positiveMillis("--max-delay"))
        .action((d, o) => o.copy(maxDelayMs = d))
        .text("delays are uniform on [0, MS) milliseconds (default 3000)"),
      opt[Long]("seed").valueName("N").action((s, o) => o.copy(seed = s))
        .text("seed of the delays (default 0): request id i always waits delay(seed, i)"),
      opt[Int]("max-connections").valueName("N")
        .validate(positive("--max-connections"))
        .action((n, o) => o.copy(maxConnections = n))
        .text("open connections at most (default 16384; the process's file limit is the real cap)"),
      opt[Long]("idle-timeout").valueName("S")
        .validate(nonNegative("--idle-timeout"))
        .action((t, o) => o.copy(idleTimeoutS = t))
        .text("close a connection idle (or stuck in a read or write) for S seconds; 0: never (default 60)"),
      opt[Long]("header-timeout").valueName("S")
        .validate(nonNegative("--header-timeout"))
        .action((t, o) => o.copy(headerTimeoutS = t))
        .text("a request's line and headers must arrive within S seconds; 0: no limit (default 10)")
    )

  private def nonNegative(option: String)(seconds: Long): Either[String, Unit] =
    if seconds >= 0 then Right(()) else Left(s"$option must be >= 0 s (0: none), was: $seconds")

  /** `s` seconds, 0 meaning no timeout. */
  def timeout(s: Long): Duration = if s == 0 then Duration.Inf else s.seconds

  def parse(args: Seq[String]): Option[Options] = OParser.parse(parser, args, Options())

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
      idleTimeout = timeout(o.idleTimeoutS),
      headerTimeout = timeout(o.headerTimeoutS)
    )

  override def check(args: List[String]): Either[String, Unit] =
    CommandLine.check(parser, args, Options())

  def run(args: List[String]): IO[ExitCode] =
    parse(args) match
      case None => IO.pure(ExitCode(2))
      case Some(o) =>
        DelayServer.resource(config(o)).use { server =>
          IO.println(s"listening on http://${o.host}:${server.port}") *>
            IO.println(
              s"GET /{id} waits delay(seed ${o.seed}, id) in [0, ${o.maxDelayMs}) ms; GET /stats; Ctrl-C stops"
            ) *> IO.never
        }
