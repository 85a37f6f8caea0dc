package weir.lab

import cats.effect.{IO, Resource}
import io.opentelemetry.exporter.prometheus.PrometheusHttpServer
import weir.Running
import weir.otel.WeirMetrics

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

  /** weir's metrics on an SDK of their own, read by the Prometheus endpoint on `port`. */
  def serve(port: Int): Resource[IO, WeirMetrics[IO]] =
    for
      server <- Resource.eval(IO(PrometheusHttpServer.builder().setHost("127.0.0.1").setPort(port).build()))
      metrics <- WeirMetrics.onSdk[IO](server) // closing the SDK closes the server
      _ <- Resource.eval(IO.println(s"metrics for Prometheus: http://127.0.0.1:$port/metrics"))
    yield metrics
