package weir.kafka

import cats.effect.IO
import cats.effect.std.Semaphore
import cats.syntax.all.*
import io.opentelemetry.api.common.AttributeKey
import io.opentelemetry.sdk.metrics.data.MetricData
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.StringDeserializer
import weir.{Disposition, Limit, Pipeline, Retry, Snapshot, TaskOutcome, TaskTimedOut}
import weir.otel.{MetricNames, WeirMetrics}

import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

/**
 * The engine's controls that no other Kafka suite uses, on a pipeline fed by the source, unchanged: a task
 * timeout with its retries, an adaptive limit, the progress snapshots, and weir-otel4s's metrics.
 */
class EngineControlsSuite extends KafkaTesting:

  test("a record that outlasts the task timeout is retried, then skipped and committed; the others succeed") {
    for
      topic <- TestBroker.topic(1)
      group = TestBroker.fresh("g")
      _ <- TestBroker.produce(topic, List((0, "a", "quick"), (0, "b", "stuck"), (0, "c", "quick")))
      result <- running(settings(topic, group))(
        r => if r.value == "stuck" then IO.never else IO.unit,
        _.withTaskTimeout(200.millis).withRetry(Retry.exponential(Duration.Zero, maxAttempts = 2))
      ) { (kafka, seen) =>
        outcomes(seen, 3).flatTap(_ => committedTo(group, new TopicPartition(topic, 0), 3L))
          .product(kafka.running.snapshot)
      }
      (seen, snapshot) = result
    yield
      val stuck =
        seen.find(_.task.value == "stuck").getOrElse(fail(s"no outcome for the stuck record: $seen"))
      stuck match
        case TaskOutcome.Failed(_, e: TaskTimedOut, Disposition.Skipped, attempts) =>
          assertEquals(e.timeout, 200.millis)
          assertEquals(attempts, 2)
        case other => fail(s"the stuck record's outcome: $other")
      assertEquals(seen.count(_.isInstanceOf[TaskOutcome.Succeeded[?, ?]]), 2, s"$seen")
      assertEquals((snapshot.timeouts, snapshot.retries), (2L, 1L))
  }

  test(
    "an adaptive limit lowers itself when latency grows with concurrency, and the progress snapshots count every record"
  ) {
    val n = 600
    for
      topic <- TestBroker.topic(4)
      _ <- TestBroker.produce(topic, (0 until n).map(i => (i % 4, s"k${i % 200}", s"$i")))
      // two records at a time are served: latency grows with every record in flight past two
      server <- Semaphore[IO](2)
      result <- running(settings(topic, TestBroker.fresh("g")))(
        _ => server.permit.surround(IO.sleep(2.millis)),
        _.withLimit(Limit.adaptive(initial = 32, min = 1, max = 64, window = 50.millis, minSamples = 5))
      ) { (kafka, _) =>
        kafka.running.metrics(20.millis).takeThrough(_.succeeded < n).compile.toVector
      }
    yield
      val snapshots: Vector[Snapshot] = result
      val limits = snapshots.map(_.limit)
      assert(limits.forall(l => l >= 1 && l <= 64), s"limit out of [1, 64]: $limits")
      assert(limits.exists(_ < 32), s"the limit never went below its initial 32: $limits")
      val finished = snapshots.map(_.finished)
      assertEquals(finished, finished.sorted, "progress went back")
      assert(snapshots.forall(_.inFlight <= 64), s"over the adaptive limit's max: $snapshots")
      assertEquals(snapshots.last.succeeded, n.toLong)
  }

  test("weir-otel4s reports a Kafka-fed run like any other: every record counted under the pipeline's name") {
    val pipelineKey = AttributeKey.stringKey(MetricNames.PipelineName)
    val queueKey = AttributeKey.stringKey(MetricNames.QueueName)
    val reader = InMemoryMetricReader.create()
    val n = 50
    for
      topic <- TestBroker.topic(2)
      _ <- TestBroker.produce(topic, (0 until n).map(i => (i % 2, s"k$i", s"$i")))
      ms <- WeirMetrics.onSdk[IO](reader).use { metrics =>
        val source = KafkaSource.start[IO, String, String, Unit](
          settings(topic, TestBroker.fresh("g")),
          new StringDeserializer,
          new StringDeserializer
        )(src =>
          Pipeline(src).process(r =>
            IO.raiseError(new IllegalStateException("odd")).whenA(r.value.toInt % 2 == 1)
          )
        )
        metrics.instrumentBy(source, "orders", queue = Some(topic))(_.running).use { kafka =>
          kafka.outcomes.take(n.toLong).compile.drain
        } *> IO.blocking(reader.collectAllMetrics().asScala.toVector)
      }
    yield
      def points(name: String) = sum(ms, name)
      val received = points(MetricNames.Received)
      assertEquals(received.map(_._2), Vector(n.toLong))
      assertEquals(received.head._1.get(pipelineKey), "orders")
      assertEquals(received.head._1.get(queueKey), topic)
      val finished = points(MetricNames.Finished)
        .map((attributes, v) => attributes.get(AttributeKey.stringKey(MetricNames.Outcome)) -> v).toMap
      assertEquals(finished.get("succeeded"), Some(n / 2L))
      assertEquals(finished.get("skipped"), Some(n / 2L))
  }

  private def sum(ms: Vector[MetricData], name: String) =
    ms.find(_.getName == name).toVector.flatMap(_.getLongSumData.getPoints.asScala.toVector)
      .map(p => p.getAttributes -> p.getValue)
