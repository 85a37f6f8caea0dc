package weir.cli

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import scopt.OParser

import java.net.{InetAddress, ServerSocket}

/**
 * `train` of the operator's jar: what the launcher runs once per build under `-XX:AOTCacheOutput` to record
 * this jar's ahead-of-time cache (ADR 0020). It needs no database: it prints every command's help, then
 * runs `durable stats` against a loopback port where nothing listens, which loads and links the
 * connection's path (HikariCP, pgjdbc, doobie, weir-postgres) up to the refused connection. The console's
 * pages need a database and are not in the cache. What the runs print is of no interest; the command fails
 * if a run ends otherwise than expected.
 */
object Train extends Command.Parsed[Unit]:

  val words: List[String] = List("train")
  val summary: String = "short runs for the launcher's ahead-of-time cache of this jar (JDK 25)"
  val defaults: Unit = ()

  val parser: OParser[Unit, Unit] =
    val builder = OParser.builder[Unit]
    import builder.*
    OParser.sequence(
      programName("weir train"),
      head(s"weir train — $summary"),
      help("help").text("print this help")
    )

  def execute(options: Unit): IO[ExitCode] =
    for
      helps <- Main.operatorCommands.traverse(c => c.run(List("--help")))
      port <- IO.blocking {
        val socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress)
        try socket.getLocalPort
        finally socket.close()
      }
      // exit code 1: the command ran and found no server, as it would find a server that is down
      refused <- Main.run(List("durable", "stats", "--url", s"postgresql://127.0.0.1:$port/weir"))
    yield
      if helps.forall(_ == ExitCode.Success) && refused == ExitCode(1) then ExitCode.Success
      else ExitCode(1)
