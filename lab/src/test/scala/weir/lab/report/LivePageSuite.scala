package weir.lab.report

import cats.effect.IO
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import munit.CatsEffectSuite

import java.nio.file.{Files, Path}
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

class LivePageSuite extends CatsEffectSuite:

  private val every = 2.seconds

  /** A page that shows the stage, whether it reloads, and the results. */
  private def draw(results: Vector[Int], stage: LivePage.Stage): String =
    s"${stage.toString.takeWhile(_ != '(')} refresh=${stage.refresh.fold("none")(_.toSeconds.toString)} " +
      s"results=${results.mkString(",")}"

  private def read(path: Path): IO[String] = IO.blocking(Files.readString(path))

  private def fresh: IO[Path] = IO.blocking(Files.createTempDirectory("weir-live").resolve("page.html"))

  test("the page is written at once, then every period with what was added, and last without a refresh") {
    val program = fresh.flatMap { path =>
      LivePage.resource[Int](path, every)(draw).use { page =>
        for
          first <- read(path)
          _ <- page.add(1) *> page.add(2)
          _ <- IO.sleep(every / 2)
          beforeTheTick <- read(path)
          _ <- IO.sleep(every / 2 + 1.milli)
          afterTheTick <- read(path)
          _ <- page.add(3)
        yield (first, beforeTheTick, afterTheTick)
      }.flatMap(pages => read(path).map(last => (pages, last, path)))
    }
    TestControl.executeEmbed(program).map { case ((first, beforeTheTick, afterTheTick), last, path) =>
      assertEquals(first, "Running refresh=2 results=")
      assertEquals(beforeTheTick, first)
      assertEquals(afterTheTick, "Running refresh=2 results=1,2")
      assertEquals(last, "Finished refresh=none results=1,2,3")
      assertEquals(
        Files.list(path.getParent).iterator.asScala.toList,
        List(path),
        "no temporary file is left"
      )
    }
  }

  test("nothing added: the page is not rewritten at the next period") {
    val program = fresh.flatMap { path =>
      LivePage.resource[Int](path, every)(draw).use { page =>
        page.add(7) *> IO.sleep(every + 1.milli) *>
          IO.blocking(Files.getLastModifiedTime(path)).flatMap { written =>
            // a page written again, with the same text, would have a new modification time
            IO.blocking(Thread.sleep(20)) *> IO.sleep(every) *> IO.blocking(Files.getLastModifiedTime(path))
              .map((written, _))
          }
      }
    }
    TestControl.executeEmbed(program).map((written, later) => assertEquals(later, written))
  }

  test("a run that fails leaves a page that says it stopped, shows what finished, and does not reload") {
    val program = fresh.flatMap { path =>
      LivePage.resource[Int](path, every)(draw).use { page =>
        page.add(1) *> IO.raiseError[Unit](new RuntimeException("boom"))
      }.attempt.flatMap(outcome => read(path).map((outcome.left.map(_.getMessage), _)))
    }
    TestControl.executeEmbed(program).map { (outcome, last) =>
      assertEquals(outcome, Left("boom"))
      assertEquals(last, "Stopped refresh=none results=1")
    }
  }

  test("a reader never sees half a page: every read while pages are rewritten is one whole page") {
    // pages large enough that writing one takes many system calls
    val pages = Vector("a", "b").map(_ * 1_000_000)
    for
      path <- fresh
      _ <- ExperimentIo.writeAtomically(path, pages(0))
      writer = (1 to 50).toList.traverse_(i => ExperimentIo.writeAtomically(path, pages(i % 2)))
      // the length of every read that was not one of the pages
      reader = (1 to 100).toList.traverse(_ =>
        read(path).map(p => Option.unless(pages.contains(p))(p.length))
      )
      both <- writer.both(reader)
    yield
      val torn = both._2.flatten
      assert(torn.isEmpty, s"${torn.size} of ${both._2.size} reads saw part of a page, of lengths $torn")
  }

  test("a period of zero is refused, naming it") {
    val e = intercept[IllegalArgumentException](LivePage.resource[Int](Path.of("x"), Duration.Zero)(draw))
    assertEquals(e.getMessage, "requirement failed: the live page's period must be > 0, was: 0 days")
  }
