package weir.lab.requests

import cats.effect.IO
import cats.effect.unsafe.IORuntime
import cats.syntax.all.*
import munit.CatsEffectSuite
import weir.WeirRuntime

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

  test("a cap on connects in progress below 1 is refused with the value") {
    val error =
      intercept[IllegalArgumentException](JettyRequestClient.resource("http://127.0.0.1:1", 10, 1.second, 0))
    assert(error.getMessage.contains("was: 0"), error.getMessage)
  }
