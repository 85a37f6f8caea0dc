package weir.kafka

import cats.effect.IO
import cats.syntax.all.*
import munit.ScalaCheckSuite
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.StringDeserializer
import org.scalacheck.{Gen, Prop}
import weir.{Disposition, Limit, TaskOutcome}

import java.util.concurrent.atomic.AtomicLong

import scala.concurrent.duration.*

class KafkaSourceSuite extends KafkaTesting with ScalaCheckSuite:

  // each case is a topic, a group and a consumer on the real broker: a few cases, not a hundred
  override def scalaCheckTestParameters =
    super.scalaCheckTestParameters.withMinSuccessfulTests(4).withWorkers(1)

  property(
    "random layouts of keys and partitions: every record ends exactly once in the outcome stream, each key's records run one at a time in order, and every partition is committed to its end"
  ) {
    val cases =
      for
        partitions <- Gen.choose(1, 3)
        keys <- Gen.choose(1, 8)
        n <- Gen.choose(1, 80)
      yield (partitions, keys, n)
    Prop.forAllNoShrink(cases) { case (partitions, keys, n) =>
      import cats.effect.unsafe.implicits.global
      (for
        topic <- TestBroker.topic(partitions)
        group = TestBroker.fresh("g")
        records = (0 until n).map(i => (i % partitions, s"k${i % keys}", s"v$i"))
        _ <- TestBroker.produce(topic, records)
        clock = new AtomicLong
        events <- IO.ref(Vector.empty[(String, Int, Boolean, Long)])
        log = (r: Rec, start: Boolean) =>
          IO(clock.incrementAndGet()).flatMap(t =>
            events.update(_ :+ ((s"${r.partition}/${r.key}", r.value.drop(1).toInt, start, t)))
          )
        handler = (r: Rec) => log(r, true) *> IO.cede *> log(r, false)
        seen <- running(settings(topic, group))(handler, _.withLimit(Limit.fixed(8))) { (_, seen) =>
          outcomes(seen, n).flatTap(_ =>
            // a partition that got no record (fewer records than partitions) has nothing to commit
            (0 until partitions).toList.map(p => p -> records.count(_._1 == p)).filter(_._2 > 0).traverse_(
              (p, end) => committedTo(group, new TopicPartition(topic, p), end.toLong)
            )
          )
        }
        all <- events.get
      yield
        // per key of a partition: start, end, start, end… in clock order (one at a time), in offset order
        all.groupBy(_._1).foreach { (key, es) =>
          val sorted = es.sortBy(_._4)
          assertEquals(sorted.map(_._3), Vector.tabulate(sorted.size)(_ % 2 == 0), s"key $key overlapped")
          val order = sorted.filter(_._3).map(_._2)
          val produced = records.collect { case (p, k, v) if s"$p/$k" == key => v.drop(1).toInt }
          assertEquals(order, produced.toVector, s"key $key out of order")
        }
        val values = seen.collect { case TaskOutcome.Succeeded(r, _, _) => r.value }
        assertEquals(values.size, seen.size, s"not all succeeded: $seen")
        assertEquals(values.sorted, records.map(_._3).sorted)
        assertEquals(seen.map(o => (o.task.partition, o.task.offset)).distinct.size, n)
      ).timeout(60.seconds).unsafeRunSync()
    }
  }

  test(
    "per-key order: one partition, many keys, a concurrent handler; each key's records run in order, one at a time"
  ) {
    val keys = 10
    val n = 200
    for
      topic <- TestBroker.topic(1)
      _ <- TestBroker.produce(topic, (0 until n).map(i => (0, s"k${i % keys}", s"${i / keys}")))
      clock = new AtomicLong
      events <- IO.ref(Vector.empty[(String, Int, Boolean, Long)])
      handler = (r: Rec) =>
        IO(clock.incrementAndGet()).flatMap(t => events.update(_ :+ ((r.key, r.value.toInt, true, t)))) *>
          IO.sleep(((r.offset * 7) % 3).millis) *>
          IO(clock.incrementAndGet()).flatMap(t => events.update(_ :+ ((r.key, r.value.toInt, false, t))))
      _ <- running(settings(topic, TestBroker.fresh("g")))(handler, _.withLimit(Limit.fixed(8))) {
        (_, seen) =>
          outcomes(seen, n)
      }
      all <- events.get
    yield
      val byKey = all.groupBy(_._1)
      assertEquals(byKey.size, keys)
      byKey.foreach { (key, es) =>
        // in clock order a key's events alternate start, end, with its sequence numbers increasing
        val sorted = es.sortBy(_._4)
        assertEquals(
          sorted.map(_._3),
          Vector.tabulate(sorted.size)(_ % 2 == 0),
          s"key $key overlapped: $sorted"
        )
        assertEquals(sorted.filter(_._3).map(_._2), (0 until n / keys).toVector, s"key $key out of order")
      }
      // and different keys did run at the same time
      val inFlight = all.sortBy(_._4).scanLeft(0)((k, e) => if e._3 then k + 1 else k - 1)
      assert(inFlight.max > 1, s"the keys never ran concurrently (max in flight ${inFlight.max})")
  }

  test(
    "an undecodable record goes to the dead-letter topic with its error, and its offset counts as finished"
  ) {
    for
      topic <- TestBroker.topic(1)
      dlt <- TestBroker.topic(1, "dlt")
      group = TestBroker.fresh("g")
      _ <- TestBroker.produce(topic, List((0, "a", "1"), (0, "b", "poison"), (0, "c", "3")))
      s = settings(topic, group).copy(deadLetterTopic = Some(dlt))
      seen <- IO.ref(Vector.empty[Out]).flatMap { seen =>
        KafkaSource
          .start[IO, String, String, Unit](s, new StringDeserializer, poisonRejecting)(src =>
            weir.Pipeline(src).process(_ => IO.unit)
          )
          .use { kafka =>
            kafka.outcomes.evalTap(o => seen.update(_ :+ o)).compile.drain.background.surround(
              outcomes(seen, 2) <* committedTo(group, new TopicPartition(topic, 0), 3L) <*
                kafka.stats.map(st => assertEquals((st.undecodable, st.deadLettered), (1L, 1L)))
            )
          }
      }
      dead <- readDeadLetters(dlt, 1)
    yield
      // "a" and "c" are different keys: they run concurrently, their outcomes in either order
      assertEquals(seen.map(_.task.value).sorted, Vector("1", "3"))
      val d = dead.head
      assertEquals(new String(d.value, "UTF-8"), "poison")
      assertEquals(new String(d.key, "UTF-8"), "b")
      assertEquals(header(d, "weir.error"), Some("java.lang.IllegalArgumentException: not a value: poison"))
      assertEquals(header(d, "weir.stage"), Some("decode"))
      assertEquals(header(d, "weir.offset"), Some("1"))
      assertEquals(header(d, "weir.topic"), Some(topic))
  }

  test(
    "a record that fails for good goes to the dead-letter topic after its retries, and counts as finished"
  ) {
    for
      topic <- TestBroker.topic(1)
      dlt <- TestBroker.topic(1, "dlt")
      group = TestBroker.fresh("g")
      _ <- TestBroker.produce(topic, List((0, "a", "ok"), (0, "b", "boom")))
      s = settings(topic, group).copy(deadLetterTopic = Some(dlt))
      seen <- running(s)(
        r => if r.value == "boom" then IO.raiseError(new IllegalStateException("boom failed")) else IO.unit,
        _.withRetry(weir.Retry.exponential(Duration.Zero, maxAttempts = 3))
      )((_, seen) => outcomes(seen, 2) <* committedTo(group, new TopicPartition(topic, 0), 2L))
      dead <- readDeadLetters(dlt, 1)
    yield
      val failed = seen.collect { case TaskOutcome.Failed(r, _, d, attempts) => (r.value, d, attempts) }
      assertEquals(failed, Vector(("boom", Disposition.DeadLettered, 3)))
      assertEquals(header(dead.head, "weir.error"), Some("java.lang.IllegalStateException: boom failed"))
      assertEquals(header(dead.head, "weir.stage"), Some("process"))
  }

  test("a drain ends the source at once, without waiting for its deadline, and what ran is committed") {
    for
      topic <- TestBroker.topic(1)
      group = TestBroker.fresh("g")
      _ <- TestBroker.produce(topic, (0 until 10).map(i => (0, s"k$i", s"$i")))
      summary <- running(settings(topic, group))(_ => IO.unit) { (kafka, seen) =>
        outcomes(seen, 10) *>
          // the deadline is far beyond the test's timeout: only a drain that ends the source passes
          kafka.drain(10.minutes) <* committedTo(group, new TopicPartition(topic, 0), 10L)
      }
    yield assertEquals(
      (summary.received, summary.succeeded, summary.stop),
      (10L, 10L, weir.StopReason.Drained)
    )
  }

  test("bad settings fail at once, naming the value") {
    val good = KafkaSettings(bootstrapServers = "localhost:1", groupId = "g", topics = List("t"))
    def fails(
        s: KafkaSettings,
        expected: String,
        policy: weir.FailurePolicy[IO, Rec] = weir.FailurePolicy.skip
    ) =
      KafkaSource
        .start[IO, String, String, Unit](
          s,
          new StringDeserializer,
          new StringDeserializer,
          RecordOrder.byKey
        )(src => weir.Pipeline(src).process(_ => IO.unit).withFailurePolicy(policy))
        .use_
        .intercept[weir.InvalidSettings]
        .map(e => assert(e.getMessage.contains(expected), s"'${e.getMessage}' does not say '$expected'"))
    List(
      good.copy(topics = Nil) -> "topics must name at least one topic, was: List()",
      good.copy(groupId = "") -> "groupId must not be empty, was: ''",
      good.copy(bootstrapServers = " ") -> "bootstrapServers must not be empty, was: ' '",
      good.copy(maxInFlight = 0) -> "maxInFlight must be > 0, was: 0",
      good.copy(maxInFlight = -3) -> "maxInFlight must be > 0, was: -3",
      good.copy(pollTimeout = Duration.Zero) -> "pollTimeout must be > 0, was: 0",
      good.copy(commitEvery = Duration(-1, "s")) -> "commitEvery must be > 0, was: -1",
      good.copy(revokeGrace = Duration(-1, "ms")) -> "revokeGrace must be >= 0",
      good.copy(topics = List("t", "")) -> "topic names must not be empty, was: ''",
      good.copy(deadLetterTopic = Some("")) -> "deadLetterTopic must not be empty when set",
      good.copy(commitMetadataBytes = -1) -> "commitMetadataBytes must be >= 0, was: -1"
    ).traverse_((s, expected) => fails(s, expected)) *>
      fails(
        good.copy(deadLetterTopic = Some("dead")),
        "with a deadLetterTopic the topic is the failure policy: leave the pipeline's at skip, was: FailFast()",
        weir.FailurePolicy.failFast[IO]
      )
  }
