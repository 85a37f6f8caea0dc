package weir.lab.durable

import cats.effect.{IO, Resource}
import io.opentelemetry.api.common.AttributeKey
import io.opentelemetry.sdk.metrics.data.MetricData
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader
import munit.CatsEffectSuite
import weir.{Limit, Pipeline}
import weir.otel.{MetricNames, WeirMetrics}
import weir.postgres.*

import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

/** weir-otel4s on a durable worker: its run reported under the pipeline's and the queue's names. */
class DurableTelemetrySuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 3.minutes

  private val database = ResourceSuiteLocalFixture("database", LabDatabase.resource(None))
  override def munitFixtures = List(database)

  private def metricsOnSdk: Resource[IO, (WeirMetrics[IO], InMemoryMetricReader)] =
    val reader = InMemoryMetricReader.create()
    WeirMetrics.onSdk[IO](reader).map(_ -> reader)

  test("a durable worker's run: every task counted under the pipeline and the queue, its latencies too") {
    val queueKey = AttributeKey.stringKey(MetricNames.QueueName)
    val pipelineKey = AttributeKey.stringKey(MetricNames.PipelineName)
    Database.migrateAndConnect[IO](database().config()).use { db =>
      metricsOnSdk.use { (metrics, reader) =>
        val worker = DurableWorker.start[IO, Int, Unit](
          db,
          WorkerConfig(queue = "mailer", stopWhenEmpty = true, pollInterval = 50.millis)
        )(source =>
          Pipeline(source).process(job => IO.sleep((job.payload % 3).millis)).withLimit(Limit.fixed(8))
        )
        for
          _ <- TaskQueue[IO, Int](db, "mailer").enqueueMany((1 to 200).map(NewTask(_)))
          summary <-
            metrics.instrumentBy(worker, "emails", queue = Some("mailer"))(_.running).use(_.running.join)
          ms <- IO.blocking(reader.collectAllMetrics().asScala.toVector)
        yield
          assertEquals(summary.succeeded, 200L)
          def points(name: String) =
            ms.find(_.getName == name).toVector.flatMap(_.getLongSumData.getPoints.asScala)
          val received = points(MetricNames.Received)
          assertEquals(received.map(_.getValue), Vector(200L))
          assertEquals(received.head.getAttributes.get(queueKey), "mailer")
          assertEquals(received.head.getAttributes.get(pipelineKey), "emails")
          val succeeded = points(MetricNames.Finished)
            .filter(_.getAttributes.get(AttributeKey.stringKey(MetricNames.Outcome)) == MetricNames.Succeeded)
          assertEquals(succeeded.map(_.getValue), Vector(200L))
          val latency: MetricData = ms.find(_.getName == MetricNames.Duration).getOrElse(fail("no histogram"))
          assertEquals(latency.getHistogramData.getPoints.asScala.map(_.getCount).toVector, Vector(200L))
      }
    }
  }
