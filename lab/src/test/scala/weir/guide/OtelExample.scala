package weir.guide

import cats.effect.{IO, Resource}
import fs2.Stream
import org.typelevel.otel4s.oteljava.OtelJava
import weir.*
import weir.otel.{LatencyProducer, WeirMetrics}

import scala.concurrent.duration.*

object OtelExample:
  def send(n: Int): IO[Unit] = IO.sleep((n % 3).millis)
  val tasks: Stream[IO, Int] = Stream.range(0, 10_000).covary[IO]

  // the SDK as the environment configures it (OTEL_* variables), with weir's latency histogram added
  val metrics: Resource[IO, WeirMetrics[IO]] =
    val latencies = LatencyProducer()
    OtelJava
      .autoConfigured[IO](_.addMeterProviderCustomizer((builder, _) =>
        builder.registerMetricProducer(latencies)
      ))
      .evalMap(_.meterProvider.get("my-service"))
      .flatMap(meter => WeirMetrics.register(meter, Some(latencies)))

  val run: IO[Summary[Int]] =
    metrics.use(m => m.run(Pipeline(tasks).process(send).withLimit(Limit.fixed(64)), pipeline = "emails"))
