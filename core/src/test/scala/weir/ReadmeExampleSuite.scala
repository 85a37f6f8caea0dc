package weir

import cats.effect.testkit.TestControl
import cats.effect.{IO, IOApp, Ref}
import fs2.Stream
import munit.CatsEffectSuite

import scala.concurrent.duration.*

/**
 * A whole program on weir-core alone (two producers, a drain, dead letters), run in virtual time. The
 * README's current quick start is `weir.guide.QuickStart` in the lab, checked by `DocSnippetsSuite`.
 */
object Crawl extends IOApp.Simple:
  def feeds(partition: Int): Stream[IO, Int] = Stream.range(partition * 500, partition * 500 + 500)
  def fetch(feed: Int): IO[String] = IO.sleep(10.millis).as(s"feed $feed")

  def summary: IO[Summary[Int]] =
    for
      deadLetters <- Ref.of[IO, Vector[(Int, Throwable)]](Vector.empty)
      summary <- Pipeline(Source.partitioned(2)(feeds))
        .process(fetch)
        .withLimit(Limit.fixed(100))
        .withBuffer(200)
        .withOrder(TaskOrder.unordered)
        .withFailurePolicy(FailurePolicy.deadLetter((feed, e) => deadLetters.update(_ :+ (feed -> e))))
        .start
        .use { running =>
          IO.sleep(2.seconds) *> running.drain(deadline = 5.seconds)
        }
    yield summary

  def run: IO[Unit] = summary.flatMap(IO.println)

class ReadmeExampleSuite extends CatsEffectSuite:
  test("the README example processes all 1000 feeds (virtual time: 10 waves of 10 ms)") {
    TestControl.executeEmbed(Crawl.summary).map { s =>
      assertEquals(s.succeeded, 1000L)
      assertEquals(s.notStarted, 0L)
      assertEquals(s.stop, StopReason.Completed)
      assertEquals(s.elapsed, 100.millis)
    }
  }
