package weir.guide

// docs/guide.md, "Testing your handlers": DocSnippetsSuite checks that the guide's block is this code,
// verbatim; GuideExamplesSuite runs it.

import cats.effect.{IO, Ref}
import cats.syntax.all.*
import weir.kafka.KafkaRecord
import weir.testkit.kafka.TestRecord

object ClickCounter:
  def handle(counts: Ref[IO, Map[String, Int]])(record: KafkaRecord[String, String]): IO[Unit] =
    counts.update(m => m.updated(record.key, m.getOrElse(record.key, 0) + 1))

object ClickCounterTest:
  val countsByPage: IO[Map[String, Int]] =
    for
      records <-
        List("home", "cart", "home").traverse(page => TestRecord(page, s"a click on $page").build[IO])
      counts <- IO.ref(Map.empty[String, Int])
      _ <- records.traverse_(ClickCounter.handle(counts))
      result <- counts.get
    yield result // Map("home" -> 2, "cart" -> 1)
