package weir.kafka

import cats.effect.IO
import cats.effect.unsafe.implicits.global
import munit.ScalaCheckSuite
import org.apache.kafka.common.serialization.StringDeserializer
import org.scalacheck.{Gen, Prop}
import weir.{InvalidSettings, Pipeline, Retry}

import scala.concurrent.duration.*

/**
 * Random invalid [[KafkaSettings]], several bad fields at once: building and copying them throws nothing,
 * and [[KafkaSource.start]] fails in `F`, before it opens a consumer (no broker is reachable here), with one
 * [[InvalidSettings]] naming every bad field with its value.
 */
class KafkaSettingsPropertySuite extends ScalaCheckSuite:

  /** One bad field: how it changes the settings, and the error that must name it. */
  final case class Bad(set: KafkaSettings => KafkaSettings, error: String):
    override def toString: String = error

  private val blank = Gen.oneOf("", " ", "\t")
  private val nonPositive = Gen.chooseNum(-1000000, 0)
  private def millis(lo: Long, hi: Long) = Gen.chooseNum(lo, hi).map(_.millis)

  private val bads: Vector[Gen[Bad]] = Vector(
    blank.map(b => Bad(_.copy(bootstrapServers = b), s"bootstrapServers must not be empty, was: '$b'")),
    blank.map(b => Bad(_.copy(groupId = b), s"groupId must not be empty, was: '$b'")),
    Gen.oneOf(
      Gen.const(Bad(_.copy(topics = Nil), "topics must name at least one topic, was: List()")),
      blank.map(b =>
        Bad(_.copy(topics = List("t", b)), s"topic names must not be empty, was: '$b' in ${List("t", b)}")
      )
    ),
    nonPositive.map(n => Bad(_.copy(maxInFlight = n), s"maxInFlight must be > 0, was: $n")),
    millis(-5000, 0).map(d => Bad(_.copy(pollTimeout = d), s"pollTimeout must be > 0, was: $d")),
    millis(-5000, 0).map(d => Bad(_.copy(commitEvery = d), s"commitEvery must be > 0, was: $d")),
    millis(-5000, -1).map(d => Bad(_.copy(revokeGrace = d), s"revokeGrace must be >= 0, was: $d")),
    blank.map(b =>
      Bad(_.copy(deadLetterTopic = Some(b)), s"deadLetterTopic must not be empty when set, was: '$b'")
    ),
    nonPositive.map(n =>
      Bad(
        _.copy(deadLetterRetry = Retry.exponential(1.milli, maxAttempts = n)),
        s"deadLetterRetry: maxAttempts must be >= 1, was: $n"
      )
    ),
    Gen.chooseNum(Int.MinValue, -1).map(n =>
      Bad(_.copy(commitMetadataBytes = n), s"commitMetadataBytes must be >= 0, was: $n")
    )
  )

  private val scenarios: Gen[List[Bad]] =
    for
      n <- Gen.choose(1, bads.size)
      chosen <- Gen.pick(n, bads.indices)
      bad <- Gen.sequence[List[Bad], Bad](chosen.toList.sorted.map(bads))
    yield bad

  property("bad settings build and copy; KafkaSource.start fails naming every bad field and its value") {
    Prop.forAll(scenarios) { bad =>
      val good = KafkaSettings(bootstrapServers = "localhost:1", groupId = "g", topics = List("t"))
      val settings = bad.foldLeft(good)((s, b) => b.set(s))
      val started = KafkaSource
        .start[IO, String, String, Unit](settings, new StringDeserializer, new StringDeserializer)(src =>
          Pipeline(src).process(_ => IO.unit)
        )
        .use_
      started.attempt.unsafeRunSync() match
        case Left(e: InvalidSettings) =>
          assert(e.getMessage.startsWith("invalid KafkaSettings: "), e.getMessage)
          bad.foreach(b =>
            assert(e.getMessage.contains(b.error), s"'${e.getMessage}' does not name '${b.error}'")
          )
          assertEquals(e.errors.size, bad.size, e.getMessage)
          assertEquals(e.errors, settings.errors)
        case other => fail(s"expected InvalidSettings naming $bad, got $other")
    }
  }

  test("valid settings have no errors") {
    assertEquals(KafkaSettings(bootstrapServers = "h:9092", groupId = "g", topics = List("t")).errors, Nil)
  }
