package weir.lab.console

import cats.effect.IO
import doobie.*
import doobie.implicits.*
import io.circe.parser.parse
import munit.CatsEffectSuite
import weir.lab.durable.LabDatabase
import weir.postgres.Database

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
      assertEquals(r.timings.count(!_.action), 24)
      assertEquals(
        r.timings.filter(_.reference).map(_.name),
        Vector("overview, counts read for each request")
      )
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
      assertEquals(timings.size, 31)
      assert(timings.forall(_.hcursor.get[Double]("p95_ms").isRight), text)
      assertEquals(timings.count(_.hcursor.get[Boolean]("reference") == Right(true)), 1, text)
    }
  }

  test("--rewritten-backlog leaves no page of the backlog all-visible, and autovacuum off it") {
    LabDatabase.resource(None, experiment = "lab_console_rewrite").use { lab =>
      val visibility = lab.read("visibility")(
        (fr"SELECT relallvisible, coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE oid = " ++
          fr0"${lab.schema("tasks")}::regclass").query[(Int, String)].unique
      )
      for
        _ <- Database.migrate[IO](lab.config())
        _ <- Database.connect[IO](lab.config()).use(db => ConsoleSeed.backlog(lab, db, 2000))
        _ <- ConsoleSeed.settle(lab)
        settled <- visibility
        _ <- ConsoleSeed.rewrite(lab)
        rewritten <- visibility
      yield
        assert(settled._1 > 0, s"the vacuum marked pages all-visible: $settled")
        assertEquals(rewritten, (0, "autovacuum_enabled=false"))
    }
  }
