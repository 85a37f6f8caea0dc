package weir.lab

import cats.effect.{IO, Resource}
import io.opentelemetry.exporter.prometheus.PrometheusHttpServer
import scopt.{OParser, OParserBuilder}
import weir.Running
import weir.otel.WeirMetrics

/**
 * `--otel PORT` of `./weir lab example` and `./weir lab heap`: the run's OpenTelemetry metrics (weir-otel4s, the
 * latency histogram included) served for Prometheus at `http://127.0.0.1:PORT/metrics` while the command
 * runs, by the OpenTelemetry Java SDK's Prometheus reader.
 */
object OtelEndpoint:

  /** The `--otel PORT` option, setting the command's own options through `set`. */
  def option[O](builder: OParserBuilder[O])(set: (O, Int) => O): OParser[Int, O] =
    builder.opt[Int]("otel").valueName("PORT")
      .validate(p =>
        if p >= 1 && p <= 65535 then builder.success
        else builder.failure(s"--otel must be a port, 1 to 65535, was: $p")
      )
      .action((p, o) => set(o, p))
      .text(
        "serve the run's OpenTelemetry metrics for Prometheus at http://127.0.0.1:PORT/metrics (default: none)"
      )

  /** Runs `body` with weir's metrics served on `port` if there is one. */
  def around[B](port: Option[Int])(body: Option[WeirMetrics[IO]] => IO[B]): IO[B] =
    port.fold(body(None))(p => serve(p).use(metrics => body(Some(metrics))))

  /** `run`, reported under `pipeline` when there are metrics. */
  def reported[A](metrics: Option[WeirMetrics[IO]], pipeline: String)(
      run: Resource[IO, Running[IO, A]]
  ): Resource[IO, Running[IO, A]] =
    metrics.fold(run)(_.instrument(run, pipeline))

  /** weir's metrics on an SDK of their own, read by the Prometheus endpoint on `port`. */
  def serve(port: Int): Resource[IO, WeirMetrics[IO]] =
    for
      server <- Resource.eval(IO(PrometheusHttpServer.builder().setHost("127.0.0.1").setPort(port).build()))
      metrics <- WeirMetrics.onSdk[IO](server) // closing the SDK closes the server
      _ <- Resource.eval(IO.println(s"metrics for Prometheus: http://127.0.0.1:$port/metrics"))
    yield metrics
