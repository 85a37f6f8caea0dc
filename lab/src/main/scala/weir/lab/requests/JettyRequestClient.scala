package weir.lab.requests

import cats.effect.{IO, Resource}
import cats.effect.std.Semaphore
import org.eclipse.jetty.client.{BufferingResponseListener, Connection, Destination, HttpClient, Result}
import org.eclipse.jetty.util.Promise
import org.eclipse.jetty.util.thread.{Invocable, QueuedThreadPool}

import java.nio.charset.StandardCharsets
import java.util.concurrent.{CancellationException, ConcurrentLinkedDeque, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger
import scala.concurrent.duration.FiniteDuration

/**
 * Eclipse Jetty's HTTP/1.1 client with a connection pool of our own (ADR 0011).
 *
 * Jetty's own pool finds an idle connection by scanning its entries from the first: with 5000
 * connections nearly all busy, that scan was a third of the client's CPU. Here the idle connections are a
 * lock-free stack instead: a request pops one (or, when none is idle, opens one onto the stack, with at
 * most `maxConnecting` connects in progress at once, and tries again), sends on it with Jetty's public
 * `Connection.send`, and pushes it back once its answer has arrived, before the waiting
 * fiber resumes — so a client that keeps at most `concurrency` requests in flight opens at most
 * `concurrency` connections, each kept alive and reused. A connection that failed or was closed by the
 * server is dropped.
 *
 * Jetty runs the selector and the callbacks on its own small thread pool; each answer resumes its fiber
 * on the Cats Effect runtime. Cancelling a `get` aborts its request (its connection is then closed).
 */
final class JettyRequestClient private (
    private val client: HttpClient,
    destination: Destination,
    base: String,
    timeout: FiniteDuration,
    opening: Semaphore[IO]
) extends RequestClient:
  private val idle = new ConcurrentLinkedDeque[Connection]
  private val connecting = new JettyRequestClient.Gauge
  private val (host, port) =
    val uri = java.net.URI.create(base)
    (uri.getHost, uri.getPort)

  /**
   * Sends on an idle connection; when none is idle, opens one (waiting for a connect slot), puts it on
   * the stack and tries again. Cancellation: the connection is taken and its request started in one
   * step that cannot be interrupted, so cancelling either finds no request (nothing was taken) or aborts
   * it (Jetty's completion then closes the connection); a connect cannot be called off, and its
   * connection goes on the stack whether or not anyone still waits for it.
   */
  def get(id: Long): IO[Long] =
    sendOnIdle(id).flatMap {
      case Some((status, body)) => IO(RequestClient.checked(id, status, body))
      case None =>
        opening.permit.surround(IO(connecting.enter()).bracket(_ => open)(_ => IO(connecting.leave()))) *>
          get(id)
    }

  /** Request `id` on a connection taken from the stack, and its status and body; `None` if none was idle. */
  private def sendOnIdle(id: Long): IO[Option[(Int, String)]] =
    IO.async { cb =>
      IO {
        pollOpen() match
          case None =>
            cb(Right(None))
            None
          case Some(connection) =>
            // scheme, host and port given apart: no URI to parse per request
            val request =
              client.newRequest(host, port).path(s"/$id").timeout(timeout.toMillis, TimeUnit.MILLISECONDS)
            connection.send(
              request,
              new BufferingResponseListener(1024) {
                override def onComplete(result: Result): Unit =
                  // back on the stack before the fiber resumes: its next request finds it
                  if result.isSucceeded && !connection.isClosed then idle.push(connection)
                  else connection.close()
                  if result.isFailed then cb(Left(result.getFailure))
                  else
                    cb(Right(Some((
                      result.getResponse.getStatus,
                      getContentAsString(StandardCharsets.UTF_8)
                    ))))
              }
            )
            Some(IO(request.abort(new CancellationException(s"request $id cancelled"))).void)
      }
    }

  /** Opens a connection and puts it on the idle stack. */
  private val open: IO[Unit] =
    IO.async_ { cb =>
      destination.newConnection(new Promise[Connection] {
        override def succeeded(connection: Connection): Unit =
          idle.push(connection)
          cb(Right(()))
        override def failed(error: Throwable): Unit = cb(Left(error))
      })
    }

  /** The most connects this client had in progress at once. */
  def peakConnecting: Int = connecting.peak

  /** An idle connection still open, if any (closed ones are dropped on the way). */
  @annotation.tailrec
  private def pollOpen(): Option[Connection] =
    idle.poll() match
      case null => None
      case c if c.isClosed => pollOpen()
      case c => Some(c)

  private def closeAll(): Unit =
    var c = idle.poll()
    while c != null do
      c.close()
      c = idle.poll()

object JettyRequestClient:

  /**
   * Connects in progress at most, by default. Thousands of connects at once (a cold start at 19,000 in
   * flight) overflowed the server's 4096-deep accept queue: the kernel drops the handshakes it cannot
   * queue, and a connect dropped five times in a row outlasts the 30 s connect timeout (a sixth of the
   * first warm-up run's requests failed so). A connect whose handshake is dropped stays in progress until
   * its retry, so this also slows new connects down while the server's queue is full.
   */
  val DefaultMaxConnecting = 512

  /** A count and its peak. */
  private final class Gauge:
    private val now = new AtomicInteger
    private val top = new AtomicInteger
    def enter(): Unit =
      val n = now.incrementAndGet()
      val _ = top.accumulateAndGet(n, math.max)
    def leave(): Unit =
      val _ = now.decrementAndGet()
    def peak: Int = top.get

  /**
   * A client for the server at `base` (`http://HOST:PORT`), with at most `maxConnecting` connects in
   * progress at once; released, its connections are closed.
   */
  def resource(
      base: String,
      concurrency: Int,
      timeout: FiniteDuration,
      maxConnecting: Int = DefaultMaxConnecting
  ): Resource[IO, JettyRequestClient] =
    require(concurrency > 0, s"concurrency must be > 0, was: $concurrency")
    require(maxConnecting > 0, s"connects in progress at most must be > 0, was: $maxConnecting")
    Resource.eval(Semaphore[IO](maxConnecting.toLong)).flatMap(opening =>
      resourceWith(base, concurrency, timeout, opening)
    )

  private def resourceWith(
      base: String,
      concurrency: Int,
      timeout: FiniteDuration,
      opening: Semaphore[IO]
  ): Resource[IO, JettyRequestClient] =
    Resource.make(IO.blocking {
      val threads = new QueuedThreadPool(8, 2)
      threads.setName("weir-jetty-client")
      threads.setDaemon(true)
      val client = new HttpClient()
      client.setExecutor(threads)
      client.setMaxConnectionsPerDestination(concurrency)
      client.setConnectTimeout(30000L)
      client.setIdleTimeout(60000L)
      client.setFollowRedirects(false)
      client.setUserAgentField(null)
      // our listener only pushes a connection and completes a callback: it may run on the selector thread
      // itself, without a hand-off to another Jetty thread per answer (ADR 0013)
      client.getHttpClientTransport.setInvocationType(Invocable.InvocationType.NON_BLOCKING)
      client.start()
      new JettyRequestClient(
        client,
        client.resolveDestination(client.newRequest(base)),
        base,
        timeout,
        opening
      )
    })(c =>
      IO.blocking {
        c.closeAll()
        c.client.stop()
      }
    )
