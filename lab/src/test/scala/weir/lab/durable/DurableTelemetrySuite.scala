package weir.lab.durable

import cats.effect.{IO, Resource}
import io.opentelemetry.api.common.AttributeKey
import io.opentelemetry.api.trace.StatusCode
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator
import io.opentelemetry.context.propagation.ContextPropagators
import io.opentelemetry.sdk.OpenTelemetrySdk
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter
import io.opentelemetry.sdk.trace.SdkTracerProvider
import io.opentelemetry.sdk.trace.`export`.SimpleSpanProcessor
import io.opentelemetry.sdk.metrics.data.MetricData
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader
import munit.CatsEffectSuite
import org.typelevel.otel4s.oteljava.OtelJava
import org.typelevel.otel4s.trace.Tracer
import cats.syntax.all.*
import weir.{Limit, Pipeline, Retry}
import weir.otel.{MetricNames, WeirMetrics, WeirTracing}
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
          // a claim refused at its start (the worker's heartbeat late, as under a heavy load: see Liveness)
          // goes back and is claimed again, one reception more; nothing else ends not started here
          assertEquals(summary.notStarted, summary.refused)
          def points(name: String) =
            ms.find(_.getName == name).toVector.flatMap(_.getLongSumData.getPoints.asScala)
          val received = points(MetricNames.Received)
          assertEquals(received.map(_.getValue), Vector(200L + summary.refused))
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

  test("the trace context travels with a durable task: each attempt's span is a child of the enqueuer's") {
    val exporter = InMemorySpanExporter.create()
    val tracing = Resource.make(
      IO(
        OpenTelemetrySdk
          .builder()
          .setTracerProvider(
            SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter)).build()
          )
          .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
          .build()
      )
    )(s => IO.blocking(s.close())).evalMap(sdk => OtelJava.fromJOpenTelemetry[IO](sdk)).evalMap(
      _.tracerProvider.get("weir-test")
    )
    Database.migrateAndConnect[IO](database().config()).use { db =>
      tracing.use { tracer =>
        given Tracer[IO] = tracer
        val queue = TaskQueue[IO, Int](db, "traced")
        val handler = WeirTracing.tracedFrom[IO, Job[Int], Unit]("send", "emails")(_.headers) { job =>
          // the first attempt of every third task fails: its retry is a span of the same trace too
          IO.raiseError(new RuntimeException("first try")).whenA(job.payload % 3 == 0 && job.attempt == 1)
        }
        val worker = DurableWorker.start[IO, Int, Unit](
          db,
          WorkerConfig(
            queue = "traced",
            stopWhenEmpty = true,
            pollInterval = 50.millis,
            backoff = Retry.exponential(Duration.Zero, maxAttempts = Int.MaxValue, jitter = Retry.Jitter.Off)
          )
        )(source => Pipeline(source).process(handler).withLimit(Limit.fixed(4)))
        for
          _ <- tracer.span("checkout").surround(
            WeirTracing.headers[IO].flatMap(h =>
              queue.enqueueMany((1 to 30).map(i => NewTask(i, headers = h)))
            )
          )
          _ <- queue.enqueue(NewTask(31)) // enqueued outside any span: no context to carry
          summary <- worker.use(_.running.join)
        yield
          // 31 tasks, the 10 that failed once claimed again, and each refused claim (see the test above)
          assertEquals(summary.notStarted, summary.refused)
          assertEquals(summary.received - summary.refused, 41L)
          val finished = exporter.getFinishedSpanItems.asScala.toVector
          val checkout = finished.find(_.getName == "checkout").getOrElse(fail("no enqueuer span"))
          val (children, roots) =
            finished.filter(_.getName == "send").partition(_.getParentSpanId == checkout.getSpanId)
          assertEquals(children.size, 40) // 30 tasks, 10 of them twice
          assert(children.forall(_.getTraceId == checkout.getTraceId))
          assertEquals(children.count(_.getStatus.getStatusCode == StatusCode.ERROR), 10)
          assertEquals(roots.size, 1)
          assert(!roots.head.getParentSpanContext.isValid, roots.head)
      }
    }
  }
