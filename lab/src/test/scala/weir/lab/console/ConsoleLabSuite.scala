package weir.lab.console

import cats.effect.IO
import io.circe.parser.parse
import munit.CatsEffectSuite

import java.nio.file.Files
import scala.concurrent.duration.*

class ConsoleLabSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 5.minutes

  test("a quick run on the embedded server times every page and action, each answering as expected") {
    val settings = ConsoleLab.Settings(url = None, quick = true)
    val run = IO.blocking(Files.createTempFile("console-lab", ".json")).flatMap { file =>
      ConsoleLab.execute(settings.copy(json = Some(file)))
        .flatMap(r => IO.blocking(Files.readString(file)).map(text => (r, text)))
        .guarantee(IO.blocking(Files.deleteIfExists(file)).void)
    }
    run.map { (r, text) =>
      // a request answered with another status than expected ends execute with an error: reaching here,
      // every page answered 200 and every action its redirect (the batch its result page)
      assertEquals(r.history, 20000L)
      assertEquals(r.backlog, 2000)
      assertEquals(r.timings.count(!_.action), 21)
      assertEquals(
        r.timings.filter(_.action).map(_.name),
        Vector(
          "pause",
          "resume",
          "limits",
          "retry a dead task",
          "discard a dead task",
          "cancel an available task",
          "retry 20 selected tasks"
        )
      )
      assert(r.timings.forall(t => t.millis.size == 5 && t.millis.forall(_ > 0)), r.timings)
      val json = parse(text).fold(e => fail(e.getMessage), identity)
      val timings = json.hcursor.downField("timings").values.getOrElse(fail("no timings")).toVector
      assertEquals(timings.size, 28)
      assert(timings.forall(_.hcursor.get[Double]("p95_ms").isRight), text)
    }
  }
