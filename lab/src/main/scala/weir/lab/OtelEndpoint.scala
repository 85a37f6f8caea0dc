package weir.lab

import cats.effect.{IO, Resource}
import io.opentelemetry.exporter.prometheus.PrometheusHttpServer
import io.opentelemetry.sdk.OpenTelemetrySdk
import io.opentelemetry.sdk.metrics.SdkMeterProvider
import org.typelevel.otel4s.oteljava.OtelJava
import weir.Running
import weir.otel.{LatencyProducer, WeirMetrics}

/**
 * `--otel PORT` of `./weir example` and `./weir soak`: the run's OpenTelemetry metrics (weir-otel4s, the
 * latency histogram included) served for Prometheus at `http://127.0.0.1:PORT/metrics` while the command
 * runs, by the OpenTelemetry Java SDK's Prometheus reader.
 */
object OtelEndpoint:

  /** Wraps a run's resource so that the run is reported under a pipeline name. */
  trait Instrument:
    def apply[A](pipeline: String)(run: Resource[IO, Running[IO, A]]): Resource[IO, Running[IO, A]]

  /** No reporting. */
  val none: Instrument = new Instrument:
    def apply[A](pipeline: String)(run: Resource[IO, Running[IO, A]]) = run

  /** Runs `body` with an endpoint on `port` if there is one, handing it the way to report its runs. */
  def around[B](port: Option[Int])(body: Instrument => IO[B]): IO[B] =
    port.fold(body(none)) { p =>
      serve(p).use { metrics =>
        body(new Instrument:
          def apply[A](pipeline: String)(run: Resource[IO, Running[IO, A]]) =
            metrics.instrument(run, pipeline))
      }
    }

  /** The SDK with the Prometheus reader on `port` and weir's latency histogram; weir's metrics on it. */
  def serve(port: Int): Resource[IO, WeirMetrics[IO]] =
    val latencies = LatencyProducer()
    for
      server <- Resource.eval(IO(PrometheusHttpServer.builder().setHost("127.0.0.1").setPort(port).build()))
      sdk <- Resource.make(
        IO(
          OpenTelemetrySdk
            .builder()
            .setMeterProvider(
              SdkMeterProvider.builder().registerMetricReader(
                server
              ).registerMetricProducer(latencies).build()
            )
            .build()
        )
      )(sdk => IO.blocking(sdk.close())) // closes the server too
      _ <- Resource.eval(IO.println(s"metrics for Prometheus: http://127.0.0.1:$port/metrics"))
      otel <- Resource.eval(OtelJava.fromJOpenTelemetry[IO](sdk))
      meter <- Resource.eval(otel.meterProvider.get("weir-lab"))
      metrics <- WeirMetrics.register(meter, Some(latencies))
    yield metrics
