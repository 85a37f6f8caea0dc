package weir.lab.requests

import cats.effect.IO
import cats.effect.unsafe.IORuntime
import cats.syntax.all.*
import munit.CatsEffectSuite
import weir.runtime.WeirRuntime
import weir.testkit.Eventually

import java.io.OutputStream
import java.net.Socket
import java.nio.charset.StandardCharsets
import scala.concurrent.duration.*

/** The delay server: its answers and counters, and clients that disconnect while it waits. */
class DelayServerSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 60.seconds
  override implicit lazy val munitIORuntime: IORuntime = WeirRuntime.unsafeCreate()._1

  private val config = DelayServer.Config(maxDelayMs = 300, seed = 5)
  private val server = ResourceFunFixture(DelayServer.resource(config))
  private val slowConfig = DelayServer.Config(maxDelayMs = 4000, seed = 5)
  private val slowServer = ResourceFunFixture(DelayServer.resource(slowConfig))
  // the lab's embedded server runs without Ember's idle and header timeouts (ADR 0013)
  private val slowServerNoTimeouts = ResourceFunFixture(
    DelayServer.resource(slowConfig.copy(idleTimeout = Duration.Inf, headerTimeout = Duration.Inf))
  )

  private def send(port: Int, id: Long): IO[Socket] = IO.blocking {
    val socket = new Socket("127.0.0.1", port)
    val out: OutputStream = socket.getOutputStream
    out.write(s"GET /$id HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII))
    out.flush()
    socket
  }

  /** Polls `stats` until `done` holds (a real server on the wall clock; bounded by the suite's timeout). */
  private def eventually(s: DelayServer.Running)(done: DelayServer.Stats => Boolean): IO[DelayServer.Stats] =
    Eventually.until("the server's counts", s.stats, within = 20.seconds, every = 20.millis)(done)

  server.test("answers the id after its delay and counts it") { s =>
    ServerHandle.at(s.baseUrl).use { h =>
      RequestClient.jdk(s.baseUrl, 10.seconds).use { c =>
        for
          t0 <- IO.monotonic
          answers <- (1L to 20L).toList.parTraverse(id => IO.blocking(c.getBlocking(id)))
          t1 <- IO.monotonic
          stats <- h.stats
        yield
          assertEquals(answers, (1L to 20L).toList)
          assertEquals((stats.served, stats.inFlight, stats.errors), (20L, 0L, 0L))
          assertEquals((stats.seed, stats.maxDelayMs), (5L, 300L))
          assert(stats.peakInFlight >= 1 && stats.peakInFlight <= 20, stats)
          // the 20 run concurrently: the run takes at least the longest delay
          assert(t1 - t0 >= (1L to 20L).map(DelayServer.delayMs(5, _, 300)).max.millis)
      }
    }
  }

  slowServer.test("clients that disconnect mid-request: in flight returns to zero, others are still served") {
    s => disconnects(s)
  }

  slowServerNoTimeouts.test(
    "without timeouts too, clients that disconnect mid-request cost nothing lasting"
  ) {
    s => disconnects(s)
  }

  private def disconnects(s: DelayServer.Running): IO[Unit] = {
    // 40 requests that each wait 2–4 s: all of them are in flight when their clients leave
    val ids =
      Iterator.from(100).map(_.toLong).filter(DelayServer.delayMs(5, _, 4000) >= 2000).take(40).toList
    for
      sockets <- ids.traverse(id => send(s.port, id))
      _ <- eventually(s)(_.inFlight == ids.size.toLong)
      // half leave politely (FIN), half abort (RST) while the server waits
      _ <- IO.blocking(sockets.zipWithIndex.foreach { (socket, i) =>
        if i % 2 == 0 then socket.setSoLinger(true, 0)
        socket.close()
      })
      after <- eventually(s)(st => st.inFlight == 0 && st.served == ids.size.toLong)
      answer <- RequestClient.jdk(s.baseUrl, 10.seconds).use(c => IO.blocking(c.getBlocking(7L)))
      last <- s.stats
    yield
      assertEquals(after.peakInFlight, ids.size.toLong)
      assert(after.abandoned >= 1 && after.abandoned <= ids.size.toLong, after)
      assertEquals(answer, 7L)
      assertEquals((last.served, last.inFlight, last.errors), (ids.size.toLong + 1, 0L, 0L))
  }

  server.test("unknown paths are 404, the peak can be reset") { s =>
    ServerHandle.at(s.baseUrl).use { h =>
      RequestClient.jdk(s.baseUrl, 10.seconds).use { c =>
        for
          notFound <- c.text("/not-a-number").attempt
          _ <- IO.blocking(c.getBlocking(1L))
          _ <- h.resetPeak
          stats <- h.stats
        yield
          assert(notFound.left.exists(_.getMessage.contains("404")), notFound)
          assertEquals(stats.peakInFlight, 0L)
      }
    }
  }

  test("the server refuses bad settings, naming the value") {
    val _ =
      interceptMessage[IllegalArgumentException]("requirement failed: max connections must be > 0, was: 0")(
        DelayServer.Config(maxConnections = 0)
      )
    val _ =
      interceptMessage[IllegalArgumentException]("requirement failed: max delay must be > 0 ms, was: -3")(
        DelayServer.Config(maxDelayMs = -3)
      )
    val _ =
      interceptMessage[IllegalArgumentException](
        "requirement failed: idle timeout must be > 0 or infinite, was: 0 days"
      )(DelayServer.Config(idleTimeout = Duration.Zero))
    val _ =
      interceptMessage[IllegalArgumentException](
        "requirement failed: header timeout must be > 0 or infinite, was: -1 seconds"
      )(DelayServer.Config(headerTimeout = -1.second))
  }
