package weir.testkit.kafka

import cats.effect.IO
import cats.syntax.all.*
import cats.effect.testkit.TestControl
import fs2.Stream
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.apache.kafka.common.TopicPartition
import org.scalacheck.{Gen, Prop}
import weir.{InvalidSettings, Pipeline, Source}

import java.nio.charset.StandardCharsets.UTF_8
import scala.concurrent.duration.*

/** A built record carries what it was built with, and runs in an engine as a plain task. */
class TestRecordSuite extends CatsEffectSuite with ScalaCheckSuite:

  test("defaults: topic test, partition 0, offset 0, no headers, produced at build time") {
    TestControl.executeEmbed(IO.sleep(5.seconds) *> TestRecord("k", 42).build[IO]).map { r =>
      assertEquals(
        (r.key, r.value, r.topic, r.partition, r.offset, r.timestamp, r.headers.toArray.length),
        ("k", 42, "test", 0, 0L, 5000L, 0)
      )
      assertEquals(r.topicPartition, new TopicPartition("test", 0))
    }
  }

  private val validRecords: Gen[TestRecord[String, Int]] =
    for
      key <- Gen.stringOfN(6, Gen.alphaNumChar)
      value <- Gen.choose(Int.MinValue, Int.MaxValue)
      topic <- Gen.stringOfN(10, Gen.alphaChar).map("t" + _)
      partition <- Gen.choose(0, 1000)
      offset <- Gen.choose(0L, Long.MaxValue)
      timestamp <- Gen.choose(0L, 4102444800000L)
      names <- Gen.listOf(Gen.oneOf("trace", "tenant", "retry"))
      headers = names.zipWithIndex.map((n, i) => TestRecord.header(n, s"v$i"))
    yield TestRecord(key, value, topic, partition, offset, Some(timestamp), headers)

  property("every field set is what the handler reads; headers keep their order and repeats") {
    Prop.forAll(validRecords) { spec =>
      val r = spec.build[IO].unsafeRunSync()
      val headers = r.headers.toArray.toList.map(h => h.key -> new String(h.value, UTF_8))
      assertEquals(
        (r.key, r.value, r.topic, r.partition, r.offset, Some(r.timestamp), headers),
        (
          spec.key,
          spec.value,
          spec.topic,
          spec.partition,
          spec.offset,
          spec.timestamp,
          spec.headers.map((n, v) => n -> new String(v, UTF_8))
        )
      )
      assertEquals(r.topicPartition, new TopicPartition(spec.topic, spec.partition))
    }
  }

  test("what no received record could have fails the build, every bad value named") {
    TestRecord(
      "k",
      "v",
      topic = "",
      partition = -1,
      offset = -2,
      timestamp = Some(-3),
      headers = List("" -> Array[Byte]())
    )
      .build[IO]
      .attempt
      .map {
        case Left(e: InvalidSettings) =>
          assertEquals(
            e.errors,
            List(
              "topic must not be empty, was: ''",
              "partition must be >= 0, was: -1",
              "offset must be >= 0, was: -2",
              "timestamp must be >= 0, was: -3",
              "header names must not be empty, was: ''"
            )
          )
        case other => fail(s"expected InvalidSettings, was: $other")
      }
  }

  test("a built record runs in a pipeline as a plain task, its handler given the record") {
    for
      records <- (0 until 3).toList.traverse(i => TestRecord(s"k$i", i, offset = i.toLong).build[IO])
      seen <- IO.ref(Vector.empty[(String, Int, Long)])
      summary <- Pipeline(Source(Stream.emits(records).covary[IO]))
        .process(r => seen.update(_ :+ (r.key, r.value, r.offset)))
        .run
      got <- seen.get
    yield
      assertEquals(summary.succeeded, 3L)
      assertEquals(got.sortBy(_._3), Vector(("k0", 0, 0L), ("k1", 1, 1L), ("k2", 2, 2L)))
  }
