package weir.cli

import cats.effect.{ExitCode, IO}

import java.net.{InetAddress, ServerSocket}

/**
 * `train` of the operator's jar: what the launcher runs once per build under `-XX:AOTCacheOutput` to record
 * this jar's ahead-of-time cache (ADR 0020). It needs no database: it parses every command and prints its
 * help, then runs `durable stats` against a loopback port where nothing listens, which loads and links the
 * connection's path (HikariCP, pgjdbc, doobie, weir-postgres) up to the refused connection. The console's
 * pages need a database and are not in the cache. What the runs print is of no interest; the command fails
 * if a run ends otherwise than expected.
 */
object Train:

  def run: IO[ExitCode] =
    for
      durableHelp <- Main.run(List("durable", "--help"))
      consoleHelp <- Main.run(List("console", "--help"))
      port <- IO.blocking {
        val socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress)
        try socket.getLocalPort
        finally socket.close()
      }
      // exit code 1: the command ran and found no server, as it would find a server that is down
      refused <- Main.run(List("durable", "stats", "--url", s"postgresql://127.0.0.1:$port/weir"))
    yield
      if List(durableHelp, consoleHelp, refused) == List(ExitCode.Success, ExitCode.Success, ExitCode(1)) then
        ExitCode.Success
      else ExitCode(1)
