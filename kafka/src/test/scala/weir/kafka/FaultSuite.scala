package weir.kafka

import cats.effect.{Deferred, IO}
import cats.syntax.all.*
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.StringDeserializer
import weir.{
  Disposition, FailurePolicy, Limit, Pipeline, RateLimiter, Retry, StopReason, TaskInterrupted, TaskOutcome
}

import scala.concurrent.duration.*

/** What the source does when something fails: the dead-letter topic, the failure policy, a retry. */
class FaultSuite extends KafkaTesting:

  test(
    "a record's offset is committed once its outcome is known, though no one has read the outcome stream yet"
  ) {
    for
      topic <- TestBroker.topic(1)
      group = TestBroker.fresh("g")
      tp = new TopicPartition(topic, 0)
      _ <- TestBroker.produce(topic, (0 until 10).map(i => (0, s"k$i", s"$i")))
      read <- KafkaSource
        .start[IO, String, String, Unit](
          settings(topic, group),
          new StringDeserializer,
          new StringDeserializer
        )(src => Pipeline(src).process(_ => IO.unit))
        .use { kafka =>
          committedTo(group, tp, 10L) *>
            kafka.stats.flatMap(st => IO(assertEquals(st.unread, 10, s"$st"))) *>
            kafka.outcomes.take(10).compile.toVector <*
            kafka.stats.flatMap(st => IO(assertEquals(st.unread, 0, s"$st")))
        }
    yield assertEquals(read.map(_.task.offset).sorted, (0L until 10L).toVector)
  }

  test(
    "a dead-letter topic that cannot be written fails the source after its retries, naming the topic; the record is not committed"
  ) {
    for
      topic <- TestBroker.topic(1)
      dlt <- TestBroker.topic(1, "dlt")
      group = TestBroker.fresh("g")
      tp = new TopicPartition(topic, 0)
      _ <- TestBroker.produce(topic, List((0, "a", "boom"), (0, "b", "ok")))
      base = settings(topic, group)
      // the producer refuses any record over 100 bytes: every dead letter, whose headers alone are longer
      s = base.copy(
        deadLetterTopic = Some(dlt),
        deadLetterRetry = Retry.exponential(10.millis, maxAttempts = 3, jitter = Retry.Jitter.Off),
        properties = base.properties + ("max.request.size" -> "100")
      )
      result <- running(s)(r =>
        if r.value == "boom" then IO.raiseError(new IllegalStateException("boom failed")) else IO.unit
      )((kafka, seen) =>
        (kafka.running.join, outcomes(seen, 2), kafka.stats).tupled
      )
      (summary, seen, stats) = result
      committed <- commitOf(group, tp)
    yield
      summary.stop match
        case StopReason.SourceFailed(e) =>
          assert(e.getMessage.contains(s"dead-letter topic '$dlt'"), e.getMessage)
          assert(e.getMessage.contains("after 3 attempt(s)"), e.getMessage)
        case other => fail(s"the source did not fail: $other")
      val boom = seen.collect { case TaskOutcome.Failed(r, _, d, _) => (r.offset, d) }
      assertEquals(boom, Vector((0L, Disposition.DeadLetterFailed)))
      assertEquals(stats.deadLetterFailures, 1L, s"$stats")
      // the finished record above it may be named in the metadata, but the offset never passes it
      assertEquals(committed.map(_._1), Some(0L))
  }

  test(
    "an undecodable record whose dead letter cannot be written fails the source, naming the topic; its offset is not committed"
  ) {
    for
      topic <- TestBroker.topic(1)
      dlt <- TestBroker.topic(1, "dlt")
      group = TestBroker.fresh("g")
      tp = new TopicPartition(topic, 0)
      _ <- TestBroker.produce(topic, List((0, "a", "1"), (0, "b", "poison"), (0, "c", "3")))
      base = settings(topic, group)
      s = base.copy(
        deadLetterTopic = Some(dlt),
        deadLetterRetry = Retry.exponential(10.millis, maxAttempts = 2, jitter = Retry.Jitter.Off),
        properties = base.properties + ("max.request.size" -> "100")
      )
      result <- KafkaSource
        .start[IO, String, String, Unit](s, new StringDeserializer, poisonRejecting)(src =>
          Pipeline(src).process(_ => IO.unit)
        )
        .use(kafka => (kafka.outcomes.compile.toVector, kafka.running.join, kafka.stats).tupled)
      (seen, summary, stats) = result
      committed <- commitOf(group, tp)
    yield
      summary.stop match
        case StopReason.SourceFailed(e) =>
          assert(e.getMessage.contains(s"dead-letter topic '$dlt'"), e.getMessage)
          assert(e.getMessage.contains(s"$topic-0@1 after 2 attempt(s)"), e.getMessage)
        case other => fail(s"the source did not fail: $other")
      // the record before it runs; the one after it is never handed out
      assertEquals(seen.map(_.task.value), Vector("1"))
      assertEquals((stats.undecodable, stats.deadLettered, stats.deadLetterFailures), (1L, 0L, 1L), s"$stats")
      assertEquals(committed.map(_._1), Some(1L))
  }

  test(
    "under fail-fast, a record that fails while the run stops is skipped, not committed: it runs again after a restart"
  ) {
    for
      topic <- TestBroker.topic(1)
      group = TestBroker.fresh("g")
      tp = new TopicPartition(topic, 0)
      _ <- TestBroker.produce(topic, List((0, "a", "fails")))
      started <- Deferred[IO, Unit]
      gate <- Deferred[IO, Unit]
      // one permit: the second record, of another key, waits for a permit while the first runs
      limiter <- RateLimiter.tokenBucket[IO](1L, 1.hour, burst = 1)
      first <- running(settings(topic, group), policy = FailurePolicy.failFast[IO])(
        r =>
          if r.offset == 0L then
            started.complete(()) *> gate.get *> IO.raiseError(new IllegalStateException("late"))
          else IO.unit,
        _.withLimit(Limit.fixed(4)).withRateLimit(limiter)
      ) { (kafka, seen) =>
        for
          _ <- started.get
          _ <- TestBroker.produce(topic, List((0, "b", "waits")))
          _ <- eventually("the second record to wait for its permit")(
            kafka.running.snapshot.map(s => Option.when(s.received == 2 && s.buffered == 0)(()))
          )
          drained <- kafka.drain(1.minute).start
          // the drain's stop hands the record waiting for its permit back at once: the run is stopping
          _ <- eventually("the drain to stop the run")(
            kafka.running.snapshot.map(s => Option.when(s.notStarted == 1)(()))
          )
          _ <- gate.complete(())
          _ <- drained.joinWithNever
          all <- outcomes(seen, 2)
        yield all
      }
      second <- running(settings(topic, group))(_ => IO.unit)((_, seen) =>
        outcomes(seen, 2) <* committedTo(group, tp, 2L)
      )
    yield
      assertEquals(
        first.collect { case TaskOutcome.Failed(r, _, d, _) => (r.offset, d) },
        Vector((0L, Disposition.Skipped))
      )
      assertEquals(second.map(_.task.offset).sorted, Vector(0L, 1L))
  }

  test(
    "a revoked record waiting for its retry ends interrupted at once: its partition moves and runs on the next owner"
  ) {
    for
      topic <- TestBroker.topic(2)
      group = TestBroker.fresh("g")
      _ <- TestBroker.produce(topic, List((0, "a", "0"), (1, "b", "1")))
      // a grace longer than the wait below: a revoke that waited for the backoff could not pass in time
      s = settings(topic, group).copy(revokeGrace = 20.seconds)
      failed <- IO.ref(0)
      bothFailed <- Deferred[IO, Unit]
      retryLater =
        Retry.exponential(10.minutes, maxAttempts = 2, maxDelay = 10.minutes, jitter = Retry.Jitter.Off)
      handlerA = (_: Rec) =>
        failed.updateAndGet(_ + 1).flatMap(n => bothFailed.complete(()).whenA(n == 2)) *>
          IO.raiseError[Unit](new IllegalStateException("try again later"))
      result <- running(s)(handlerA, _.withRetry(retryLater)) { (a, seenA) =>
        bothFailed.get *> running(s)(_ => IO.unit) { (_, seenB) =>
          eventually("a record to succeed on the second consumer", 10.seconds)(
            seenB.get.map(_.collectFirst { case TaskOutcome.Succeeded(r, _, _) => r.partition })
          )
        }.flatMap(p =>
          // the revoke's interruption ended its backoff: the record's outcome on the first consumer, long
          // before the 10 minutes
          eventually("the revoked record's outcome on the first consumer", 10.seconds)(
            seenA.get.map(_.collectFirst {
              case TaskOutcome.Failed(r, e: TaskInterrupted, Disposition.Interrupted, 1)
                  if r.partition == p =>
                e.reason
            })
          ).flatMap(reason => (failed.get, a.stats).mapN((n, st) => (reason, n, st)))
        )
      }
      (reason, attempts, statsA) = result
    yield
      assert(statsA.revoked >= 1, s"$statsA")
      assert(reason.contains("revoked"), reason)
      assertEquals(statsA.interrupted, 0L, "no record was in an attempt")
      // the revoked record's retry never ran on the first consumer
      assertEquals(attempts, 2)
  }
