package weir.lab.requests

import cats.effect.{IO, Resource}
import org.http4s.Uri
import org.http4s.ember.client.EmberClientBuilder
import org.typelevel.log4cats.noop.NoOpLogger

import java.net.URI
import java.net.http.{HttpClient, HttpRequest, HttpResponse}
import java.time.Duration as JDuration
import scala.concurrent.duration.*

/**
 * An HTTP client for the delay server: `get(id)` sends `GET {base}/{id}` and succeeds with the id the
 * server answered, or fails (connection error, timeout, a status other than 200, or an answer that is not
 * the id).
 *
 * Cancellation: cancelling `get` abandons the request (Ember closes the connection; the JDK client
 * cancels its future).
 */
trait RequestClient:
  def get(id: Long): IO[Long]

/** Which asynchronous client the non-blocking approaches use (ADR 0009). */
enum ClientKind(val label: String):
  /** http4s Ember's client, its pool sized to the concurrency. */
  case Ember extends ClientKind("ember")

  /** The JDK's `java.net.http.HttpClient.sendAsync`. */
  case Jdk extends ClientKind("jdk")

  /** Eclipse Jetty's `HttpClient` (HTTP/1.1), its pool sized to the concurrency (ADR 0011). */
  case Jetty extends ClientKind("jetty")

object ClientKind:
  def parse(s: String): Either[String, ClientKind] =
    ClientKind.values.find(_.label == s).toRight(
      s"--client must be ${ClientKind.values.map(_.label).mkString(", ")}, was: $s"
    )

object RequestClient:

  /**
   * The asynchronous client of `kind` for `concurrency` requests in flight at once. Ember's pool defaults
   * (100 connections in total, 100 per host) would silently cap the concurrency at 100: both are set to
   * `concurrency` here, so every request in flight has its own connection.
   */
  def async(
      kind: ClientKind,
      base: String,
      concurrency: Int,
      timeout: FiniteDuration
  ): Resource[IO, RequestClient] =
    kind match
      case ClientKind.Ember => ember(base, concurrency, timeout)
      case ClientKind.Jdk => jdk(base, timeout).map(c => (id: Long) => c.getAsync(id))
      case ClientKind.Jetty => JettyRequestClient.resource(base, concurrency, timeout)

  def ember(base: String, concurrency: Int, timeout: FiniteDuration): Resource[IO, RequestClient] =
    require(concurrency > 0, s"concurrency must be > 0, was: $concurrency")
    val root = Uri.unsafeFromString(base)
    EmberClientBuilder
      .default[IO]
      .withMaxTotal(concurrency)
      .withMaxPerKey(_ => concurrency)
      .withIdleTimeInPool(60.seconds)
      // the answers are a few bytes: 4 KiB reads instead of the default 32 KiB (allocated per read)
      .withChunkSize(4096)
      .withTimeout(timeout)
      .withLogger(NoOpLogger[IO])
      .withoutUserAgent
      .build
      .map { client => (id: Long) =>
        client.expect[String](root.withPath(Uri.Path.unsafeFromString(s"/$id"))).flatMap(body =>
          check(id, body)
        )
      }

  /** The JDK's HTTP/1.1 client, for both the blocking and the asynchronous calls. */
  def jdk(base: String, timeout: FiniteDuration): Resource[IO, Jdk] =
    Resource.make(IO(new Jdk(base, timeout)))(c => IO.blocking(c.close()))

  /**
   * The JDK client: `getBlocking` blocks the calling thread until the answer (what the write-up's
   * `SimpleHttpClient.send` does), `getAsync` does not block.
   */
  final class Jdk(base: String, timeout: FiniteDuration):
    private val client =
      HttpClient.newBuilder().version(
        HttpClient.Version.HTTP_1_1
      ).connectTimeout(JDuration.ofSeconds(30)).build()
    private val requestTimeout = JDuration.ofMillis(timeout.toMillis)

    private def request(path: String): HttpRequest =
      HttpRequest.newBuilder(URI.create(s"$base$path")).timeout(requestTimeout).GET().build()

    def getBlocking(id: Long): Long =
      val response = client.send(request(s"/$id"), HttpResponse.BodyHandlers.ofString())
      checked(id, response.statusCode, response.body)

    def getAsync(id: Long): IO[Long] =
      IO.fromCompletableFuture(IO(client.sendAsync(request(s"/$id"), HttpResponse.BodyHandlers.ofString())))
        .flatMap(r => IO(checked(id, r.statusCode, r.body)))

    /** A plain GET or POST of `path` returning the body (for `/stats`). */
    def text(path: String, post: Boolean = false): IO[String] =
      IO.blocking {
        val builder = HttpRequest.newBuilder(URI.create(s"$base$path")).timeout(JDuration.ofSeconds(10))
        val r =
          if post then builder.POST(HttpRequest.BodyPublishers.noBody()).build() else builder.GET().build()
        val response = client.send(r, HttpResponse.BodyHandlers.ofString())
        if response.statusCode != 200 then
          throw new IllegalStateException(s"$path answered ${response.statusCode}: ${response.body}")
        response.body
      }

    def close(): Unit = client.close()

  private def check(id: Long, body: String): IO[Long] = IO(checked(id, 200, body))

  private[requests] def checked(id: Long, status: Int, body: String): Long =
    if status != 200 then throw new IllegalStateException(s"request $id answered $status")
    else if body.trim != id.toString then
      throw new IllegalStateException(s"request $id answered '${body.take(40)}', not its id")
    else id
