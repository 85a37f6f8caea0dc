package weir.lab.requests

import cats.effect.{IO, Resource}
import com.comcast.ip4s.{Host, Port}
import io.circe.Json
import io.circe.parser.parse
import io.circe.syntax.*
import fs2.{Chunk, Stream}
import org.http4s.{Headers, HttpApp, HttpRoutes, Method, Request, Response, Status as HttpStatus}
import org.http4s.headers.`Content-Length`
import org.http4s.dsl.io.*
import org.http4s.ember.server.EmberServerBuilder
import org.http4s.server.Server
import org.typelevel.log4cats.noop.NoOpLogger
import fs2.io.net.Network

import java.lang.management.ManagementFactory
import java.nio.charset.StandardCharsets
import java.util.concurrent.atomic.AtomicLong
import scala.concurrent.duration.*

/**
 * The delay server of seed 002, on http4s Ember: `GET /{id}` answers `id` after a delay drawn uniformly
 * from `[0, maxDelay)` ms as a pure function of `(seed, id)` ([[DelayServer.delayMs]]), so the lab knows
 * every request's delay before it sends it.
 *
 *   - `GET /stats`: `{"served", "in_flight", "peak_in_flight", "abandoned", "errors", "cpu_ms", "seed",
 *     "max_delay_ms"}` as JSON (`cpu_ms`: the server process's CPU time so far);
 *   - `POST /stats/reset-peak`: the peak in flight starts again from the current in flight (between runs).
 *
 * ==Resources==
 * At most `maxConnections` connections are open at once (Ember refuses to accept more until one closes),
 * and up to `backlog` more wait in the kernel's accept queue ([[WideBacklogSocketGroup]]);
 * a connection idle for `idleTimeout` is closed; the request line and headers must arrive within
 * `headerTimeout` and fit in 16 KiB (either timeout may be infinite: then only `maxConnections` bounds the
 * connections a silent client holds). A request holds one fiber sleeping on the runtime's timer, nothing
 * else, while it waits.
 *
 * ==Clients that disconnect==
 * The handler does not notice the client leaving while it sleeps: it finishes its delay, the write of the
 * answer fails, Ember closes the connection and the server counts the request as `abandoned` (it is also
 * counted in `served`: the answer was produced). The in-flight count is decremented on every path
 * (success, error, cancellation), so it always returns to zero.
 */
object DelayServer:

  final case class Config(
      host: Host = Host.fromString("127.0.0.1").get,
      port: Int = 0,
      maxDelayMs: Long = 3000,
      seed: Long = 0L,
      maxConnections: Int = 16384,
      idleTimeout: Duration = 60.seconds,
      headerTimeout: Duration = 10.seconds,
      backlog: Int = 4096
  ):
    require(maxDelayMs > 0, s"max delay must be > 0 ms, was: $maxDelayMs")
    require(maxConnections > 0, s"max connections must be > 0, was: $maxConnections")
    require(backlog > 0, s"backlog must be > 0, was: $backlog")
    require(port >= 0 && port <= 65535, s"port must be in [0, 65535], was: $port")
    require(idleTimeout > Duration.Zero, s"idle timeout must be > 0 or infinite, was: $idleTimeout")
    require(headerTimeout > Duration.Zero, s"header timeout must be > 0 or infinite, was: $headerTimeout")

  /** The server's counters at one moment. */
  final case class Stats(
      served: Long,
      inFlight: Long,
      peakInFlight: Long,
      abandoned: Long,
      errors: Long,
      cpuMs: Long,
      seed: Long,
      maxDelayMs: Long
  ):
    def toJson: Json = Json.obj(
      "served" -> served.asJson,
      "in_flight" -> inFlight.asJson,
      "peak_in_flight" -> peakInFlight.asJson,
      "abandoned" -> abandoned.asJson,
      "errors" -> errors.asJson,
      "cpu_ms" -> cpuMs.asJson,
      "seed" -> seed.asJson,
      "max_delay_ms" -> maxDelayMs.asJson
    )

  object Stats:
    def fromJson(text: String): Either[String, Stats] =
      parse(text).left.map(_.message).flatMap { j =>
        val c = j.hcursor
        (for
          served <- c.get[Long]("served")
          inFlight <- c.get[Long]("in_flight")
          peak <- c.get[Long]("peak_in_flight")
          abandoned <- c.get[Long]("abandoned")
          errors <- c.get[Long]("errors")
          cpu <- c.get[Long]("cpu_ms")
          seed <- c.get[Long]("seed")
          maxDelay <- c.get[Long]("max_delay_ms")
        yield Stats(served, inFlight, peak, abandoned, errors, cpu, seed, maxDelay)).left.map(_.getMessage)
      }

  /** A running server: where it listens and its counters. */
  final class Running private[DelayServer] (val port: Int, counters: Counters):
    def baseUrl: String = s"http://127.0.0.1:$port"
    def stats: IO[Stats] = IO(counters.snapshot)
    def resetPeak: IO[Unit] = IO(counters.resetPeak())

  /**
   * The delay of request `id` in ms, uniform on `[0, maxDelayMs)`: the SplitMix64 finaliser (Steele, Lea and
   * Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014) of `seed` and `id`, scaled to the
   * range by a 64×64→128-bit multiplication (Lemire's multiply-shift; bias below 2^-40 for ranges under
   * 2^24 ms).
   */
  def delayMs(seed: Long, id: Long, maxDelayMs: Long): Long =
    require(maxDelayMs > 0, s"max delay must be > 0 ms, was: $maxDelayMs")
    var z = seed * 0x9e3779b97f4a7c15L + id * 0xbf58476d1ce4e5b9L + 0x94d049bb133111ebL
    z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L
    z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL
    z = z ^ (z >>> 31)
    Math.unsignedMultiplyHigh(z, maxDelayMs)

  /** Starts the server; released, it stops accepting and closes its connections (within 2 s). */
  def resource(config: Config): Resource[IO, Running] =
    for
      counters <- Resource.eval(IO(new Counters(config.seed, config.maxDelayMs)))
      server <- EmberServerBuilder
        .default[IO]
        .withHost(config.host)
        .withPort(Port.fromInt(config.port).get)
        .withHttpApp(app(config, counters))
        .withMaxConnections(config.maxConnections)
        .withSocketGroup(new WideBacklogSocketGroup(config.backlog, Network[IO]))
        // each finite timeout is a race (two fibers and a timer) around every read, write or header parse:
        // three per request; the lab's embedded server runs without them (ADR 0013)
        .withIdleTimeout(config.idleTimeout)
        .withRequestHeaderReceiveTimeout(config.headerTimeout)
        .withMaxHeaderSize(16 * 1024)
        // Ember reads into a fresh buffer of this size on every read (default 256 KiB): with thousands of
        // connections that alone allocated gigabytes per second and spent a sixth of the time in GC pauses
        .withReceiveBufferSize(4096)
        .withShutdownTimeout(2.seconds)
        .withLogger(NoOpLogger[IO])
        .withErrorHandler { case _ =>
          IO(counters.errors.incrementAndGet()).as(Response[IO](HttpStatus.InternalServerError))
        }
        .withOnWriteFailure((_, _, _) => IO(counters.abandoned.incrementAndGet()).void)
        .build
    yield new Running(portOf(server), counters)

  private def portOf(server: Server): Int = server.address.getPort

  private def app(config: Config, counters: Counters): HttpApp[IO] =
    val stats = HttpRoutes
      .of[IO] {
        case GET -> Root / "stats" => Ok(counters.snapshot.toJson.noSpaces)
        case POST -> Root / "stats" / "reset-peak" => IO(counters.resetPeak()) *>
            Ok(counters.snapshot.toJson.noSpaces)
      }
      .orNotFound
    HttpApp[IO] { request =>
      idOf(request) match
        case Some(id) =>
          val wait = IO.sleep(delayMs(config.seed, id, config.maxDelayMs).millis)
          IO(counters.enter()).bracket(_ => wait)(_ => IO(counters.leave())) *>
            IO {
              val _ = counters.served.incrementAndGet()
              answer(id)
            }
        case None => stats.run(request)
    }

  /** The id of `GET /{id}` (a single segment, a decimal `Long`), read without the routing DSL. */
  private def idOf(request: Request[IO]): Option[Long] =
    if request.method != Method.GET then None
    else
      val segments = request.uri.path.segments
      if segments.length != 1 then None else segments(0).encoded.toLongOption

  /**
   * The answer to `GET /{id}`: the id's digits with their length, no other header (Ember adds `Date` and
   * `Connection`); the body is one chunk.
   */
  private def answer(id: Long): Response[IO] =
    val bytes = id.toString.getBytes(StandardCharsets.US_ASCII)
    Response[IO](
      HttpStatus.Ok,
      headers = Headers(`Content-Length`.unsafeFromLong(bytes.length.toLong)),
      body = Stream.chunk(Chunk.array(bytes))
    )

  /** Lock-free counters: a request costs three atomic increments and a compare-and-set loop for the peak. */
  private final class Counters(seed: Long, maxDelayMs: Long):
    val served = new AtomicLong
    val inFlight = new AtomicLong
    val peak = new AtomicLong
    val abandoned = new AtomicLong
    val errors = new AtomicLong

    def enter(): Unit =
      val now = inFlight.incrementAndGet()
      val _ = peak.accumulateAndGet(now, (a, b) => math.max(a, b))

    def leave(): Unit =
      val _ = inFlight.decrementAndGet()

    def resetPeak(): Unit = peak.set(inFlight.get)

    def snapshot: Stats =
      Stats(
        served.get,
        inFlight.get,
        peak.get,
        abandoned.get,
        errors.get,
        cpuNanos / 1000000,
        seed,
        maxDelayMs
      )

  private def cpuNanos: Long =
    ManagementFactory.getOperatingSystemMXBean match
      case os: com.sun.management.OperatingSystemMXBean => os.getProcessCpuTime
      case _ => -1000000L
