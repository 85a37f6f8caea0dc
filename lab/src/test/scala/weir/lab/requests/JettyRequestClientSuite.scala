package weir.lab.requests

import cats.effect.IO
import cats.effect.unsafe.IORuntime
import cats.syntax.all.*
import munit.CatsEffectSuite
import weir.runtime.WeirRuntime

import scala.concurrent.duration.*

/** The lab's Jetty client against a real delay server: connects in progress stay under their cap. */
class JettyRequestClientSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 60.seconds
  override implicit lazy val munitIORuntime: IORuntime = WeirRuntime.unsafeCreate()._1

  test("200 requests at once open their connections at most 4 at a time, and all succeed") {
    val server = DelayServer.resource(DelayServer.Config(maxDelayMs = 20, seed = 3))
    server.use { s =>
      JettyRequestClient.resource(s.baseUrl, 200, 30.seconds, maxConnecting = 4).use { client =>
        (0L until 200L).toList.parTraverse(id => client.get(id)).map { ids =>
          assertEquals(ids, (0L until 200L).toList)
          assert(client.peakConnecting >= 1 && client.peakConnecting <= 4, client.peakConnecting)
        }
      }
    }
  }

  test("a cancelled request is aborted, its connection is not reused, and the client goes on") {
    val config = DelayServer.Config(maxDelayMs = 2000, seed = 5)
    // an id the server answers only after at least 500 ms: cancelled after 100 ms, it is still waiting
    val slow = (0L until 1000L).find(DelayServer.delayMs(config.seed, _, config.maxDelayMs) >= 500).get
    val fast = (0L until 1000L).filter(DelayServer.delayMs(
      config.seed,
      _,
      config.maxDelayMs
    ) < 50).take(20).toList
    DelayServer.resource(config).use { s =>
      JettyRequestClient.resource(s.baseUrl, 20, 30.seconds, maxConnecting = 4).use { client =>
        for
          cancelled <- client.get(slow).timeout(100.millis).attempt
          answers <- fast.parTraverse(client.get)
          left <- ServerHandle.quiesce(s.stats.map(_.inFlight), 10.seconds)
          stats <- s.stats
        yield
          assert(cancelled.left.exists(_.isInstanceOf[java.util.concurrent.TimeoutException]), cancelled)
          // had the aborted connection been reused while the slow answer was still due, a later request
          // would have read that answer as its own (`checked` compares the id in the body)
          assertEquals(answers, fast)
          assertEquals(left, 0L)
          assertEquals(stats.served, fast.size + 1L) // the slow one too, once its delay ended
      }
    }
  }

  test("a cap on connects in progress below 1 is refused with the value") {
    val error =
      intercept[IllegalArgumentException](JettyRequestClient.resource("http://127.0.0.1:1", 10, 1.second, 0))
    assert(error.getMessage.contains("was: 0"), error.getMessage)
  }
