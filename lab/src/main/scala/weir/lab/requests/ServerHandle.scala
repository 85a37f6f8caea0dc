package weir.lab.requests

import cats.effect.{Deferred, IO, Resource}

import scala.concurrent.duration.*

/**
 * The delay server a run talks to, wherever it runs: its base URL, and its counters read over HTTP
 * (`GET /stats`), so an embedded server, one in a child JVM and one started by hand look the same.
 */
final class ServerHandle private (val baseUrl: String, http: RequestClient.Jdk):
  def stats: IO[DelayServer.Stats] = http.text("/stats").flatMap(parsed)

  /** The server's peak in flight starts again from its current in flight; its counters just after. */
  def resetPeak: IO[DelayServer.Stats] = http.text("/stats/reset-peak", post = true).flatMap(parsed)

  private def parsed(json: String): IO[DelayServer.Stats] =
    IO.fromEither(DelayServer.Stats.fromJson(json).left.map(e =>
      new IllegalStateException(s"bad /stats: $e")
    ))

  /** [[ServerHandle.quiesce]] on this server's `/stats`. */
  def quiesce(within: FiniteDuration): IO[Long] = ServerHandle.quiesce(stats.map(_.inFlight), within)

/** Where the embedded server runs (ADR 0009). */
enum ServerPlacement(val label: String):
  /** `./weir lab serve` in a child JVM: its own file-descriptor limit, heap, threads and CPU account. */
  case Child extends ServerPlacement("child")

  /** In the lab's own JVM, sharing its runtime. */
  case Same extends ServerPlacement("same")

object ServerPlacement:
  def parse(s: String): Either[String, ServerPlacement] =
    ServerPlacement.values.find(_.label == s).toRight(s"--server must be child or same, was: $s")

object ServerHandle:

  /**
   * Waits until `inFlight` reads 0, reading it every `every` for at most `within`; the last count read (0
   * if the server emptied in time). Between two runs the server may still be sleeping on requests the
   * client gave up on (a failed or timed-out request's connection is closed, but the server only notices
   * when it answers); starting the next run before they end would count them in its peak in flight.
   */
  def quiesce(inFlight: IO[Long], within: FiniteDuration, every: FiniteDuration = 50.millis): IO[Long] =
    require(every > Duration.Zero, s"poll interval must be > 0, was: $every")
    IO.monotonic.flatMap { start =>
      def loop: IO[Long] =
        inFlight.flatMap { n =>
          if n == 0 then IO.pure(0L)
          else
            IO.monotonic.flatMap(now => if now - start >= within then IO.pure(n) else IO.sleep(every) *> loop)
        }
      loop
    }

  /** A timeout as `weir lab serve` takes it: a duration, 0s for none. */
  private def timeout(d: Duration): String =
    d match
      case f: FiniteDuration if f > Duration.Zero => weir.cli.Durations.show(f)
      case _ => "0s"

  /** A server already running at `url` (e.g. `http://127.0.0.1:8000`). */
  def at(url: String): Resource[IO, ServerHandle] =
    val base = url.stripSuffix("/")
    RequestClient.jdk(base, 30.seconds).map(new ServerHandle(base, _))

  /** Starts a server with `config` (its port ignored: a free one is picked) and connects to it. */
  def embedded(config: DelayServer.Config, placement: ServerPlacement): Resource[IO, ServerHandle] =
    placement match
      case ServerPlacement.Same =>
        DelayServer.resource(config.copy(port = 0)).flatMap(s => at(s.baseUrl))
      case ServerPlacement.Child =>
        val args = List(
          "lab",
          "serve",
          "--port",
          "0",
          "--max-delay",
          s"${config.maxDelayMs}ms",
          "--seed",
          config.seed.toString,
          "--max-connections",
          config.maxConnections.toString,
          "--idle-timeout",
          timeout(config.idleTimeout),
          "--header-timeout",
          timeout(config.headerTimeout)
        )
        for
          url <- Resource.eval(Deferred[IO, Either[Throwable, String]])
          child <- LabJvm.start(
            // no heap or collector flag: ParallelGC with a fixed 1 GiB young generation collected less
            // often but paused longer than G1's default, for the same CPU (ADR 0013)
            Nil,
            args,
            line =>
              if line.startsWith("listening on ") then
                url.complete(Right(line.stripPrefix("listening on "))).void
              else IO.unit
          )
          found <- Resource.eval(
            IO.race(url.get, child.exitCode).flatMap {
              case Left(Right(u)) => IO.pure(u)
              case Left(Left(e)) => IO.raiseError(e)
              case Right(code) =>
                IO.raiseError(new IllegalStateException(s"the server's JVM exited with $code"))
            }.timeout(60.seconds)
          )
          handle <- at(found)
        yield handle
