package weir.otel

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import fs2.Stream
import io.opentelemetry.api.common.AttributeKey
import io.opentelemetry.api.trace.{SpanKind, StatusCode}
import io.opentelemetry.context.propagation.ContextPropagators
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator
import io.opentelemetry.sdk.OpenTelemetrySdk
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter
import io.opentelemetry.sdk.trace.SdkTracerProvider
import io.opentelemetry.sdk.trace.data.SpanData
import io.opentelemetry.sdk.trace.`export`.SimpleSpanProcessor
import munit.CatsEffectSuite
import org.typelevel.otel4s.oteljava.OtelJava
import org.typelevel.otel4s.trace.Tracer
import weir.*

import scala.jdk.CollectionConverters.*

class WeirTracingSuite extends CatsEffectSuite:

  /** A tracer on the Java SDK whose spans end up in `exporter`, with W3C propagation. */
  private def tracing: Resource[IO, (Tracer[IO], InMemorySpanExporter)] =
    val exporter = InMemorySpanExporter.create()
    for
      sdk <- Resource.make(
        IO(
          OpenTelemetrySdk
            .builder()
            .setTracerProvider(
              SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(exporter)).build()
            )
            .setPropagators(ContextPropagators.create(W3CTraceContextPropagator.getInstance()))
            .build()
        )
      )(s => IO.blocking(s.close()))
      otel <- Resource.eval(OtelJava.fromJOpenTelemetry[IO](sdk))
      tracer <- Resource.eval(otel.tracerProvider.get("weir-test"))
    yield (tracer, exporter)

  private def spans(exporter: InMemorySpanExporter, name: String): Vector[SpanData] =
    exporter.getFinishedSpanItems.asScala.toVector.filter(_.getName == name)

  private val pipelineKey = AttributeKey.stringKey(MetricNames.PipelineName)

  test(
    "traced: a span per attempt, named, a consumer's, with the pipeline; failed attempts carry the error"
  ) {
    tracing.use { (tracer, exporter) =>
      given Tracer[IO] = tracer
      val handler = WeirTracing.traced[IO, Int, Unit]("send", "emails") { i =>
        IO.raiseError(new RuntimeException(s"task $i")).whenA(i % 5 == 0)
      }
      Pipeline(Stream.range(1, 11).covary[IO])
        .process(handler)
        .withRetry(Retry.exponential(
          scala.concurrent.duration.Duration.Zero,
          maxAttempts = 2,
          jitter = Retry.Jitter.Off
        ))
        .run
        .map { summary =>
          assertEquals((summary.succeeded, summary.failed), (8L, 2L))
          val all = spans(exporter, "send")
          assertEquals(all.size, 12) // 8 attempts that succeeded, 2 tasks that failed twice
          assert(all.forall(s =>
            s.getKind == SpanKind.CONSUMER && s.getAttributes.get(pipelineKey) == "emails"
          ))
          val failed = all.filter(_.getStatus.getStatusCode == StatusCode.ERROR)
          assertEquals(failed.size, 4)
          assert(failed.forall(_.getEvents.asScala.exists(_.getName == "exception")), failed)
        }
    }
  }

  test("tracedFrom: the headers taken at enqueue make each attempt a child of the enqueuer's span") {
    tracing.use { (tracer, exporter) =>
      given Tracer[IO] = tracer
      final case class Task(n: Int, headers: Map[String, String])
      val handler = WeirTracing.tracedFrom[IO, Task, Unit]("work", "jobs")(_.headers)(_ => IO.unit)
      for
        enqueued <- tracer.span("enqueue").surround(WeirTracing.headers[IO].map(h => Task(1, h)))
        _ <- Pipeline(Stream(enqueued, Task(2, Map.empty)).covary[IO]).process(handler).run
      yield
        assert(enqueued.headers.contains("traceparent"), enqueued.headers)
        val parent = spans(exporter, "enqueue").head
        val work = spans(exporter, "work")
        assertEquals(work.size, 2)
        val child =
          work.find(_.getParentSpanId == parent.getSpanId).getOrElse(fail(s"no child of $parent in $work"))
        assertEquals(child.getTraceId, parent.getTraceId)
        val root = work.filterNot(_ eq child).head
        assert(!root.getParentSpanContext.isValid, root) // no headers: a root span of a trace of its own
        assertNotEquals(root.getTraceId, parent.getTraceId)
    }
  }

  test("with the no-op tracer a wrapped handler runs as it is, and the headers are empty") {
    given Tracer[IO] = Tracer.noop[IO]
    val handler = WeirTracing.traced[IO, Int, Int]("x", "p")(i => IO.pure(i * 2))
    (Stream.range(0, 3).covary[IO].evalMap(handler).compile.toVector, WeirTracing.headers[IO]).tupled.map {
      (out, h) =>
        assertEquals(out, Vector(0, 2, 4))
        assertEquals(h, Map.empty[String, String])
    }
  }
