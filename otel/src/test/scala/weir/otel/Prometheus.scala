package weir.otel

import cats.effect.{IO, Resource}
import io.opentelemetry.exporter.prometheus.PrometheusHttpServer
import io.opentelemetry.sdk.OpenTelemetrySdk
import io.opentelemetry.sdk.metrics.SdkMeterProvider
import org.typelevel.otel4s.metrics.Meter
import org.typelevel.otel4s.oteljava.OtelJava

import java.net.http.{HttpClient, HttpRequest, HttpResponse}
import java.net.{ServerSocket, URI}
import scala.concurrent.duration.*

/** An OpenTelemetry SDK whose metrics the SDK's Prometheus endpoint serves, scraped over HTTP. */
final class Prometheus private (val meter: Meter[IO], port: Int):
  import Prometheus.*

  /** One scrape of the endpoint: the text exposition, parsed. */
  def scrape: IO[Exposition] =
    IO.blocking {
      val request = HttpRequest.newBuilder(URI.create(s"http://127.0.0.1:$port/metrics")).build()
      client.send(request, HttpResponse.BodyHandlers.ofString()).body
    }.map(Exposition.parse)

  /** Scrapes until `p` holds of a scrape (a signal the code under test gives), for at most `timeout`. */
  def await(what: String, timeout: FiniteDuration = 30.seconds)(p: Exposition => Boolean): IO[Exposition] =
    def loop: IO[Exposition] = scrape.flatMap(e => if p(e) then IO.pure(e) else IO.sleep(50.millis) *> loop)
    loop.timeoutTo(
      timeout,
      scrape.map(e => munit.Assertions.fail(s"no scrape showed $what in $timeout; the last:\n${e.text}"))
    )

object Prometheus:
  private val client = HttpClient.newHttpClient()

  /** An SDK of its own, served on a free port of 127.0.0.1 until released. */
  def resource: Resource[IO, Prometheus] =
    for
      port <- Resource.eval(IO.blocking {
        val s = new ServerSocket(0)
        try s.getLocalPort
        finally s.close()
      })
      server <- Resource.eval(IO(PrometheusHttpServer.builder().setHost("127.0.0.1").setPort(port).build()))
      sdk <- Resource.make(IO(
        OpenTelemetrySdk.builder().setMeterProvider(
          SdkMeterProvider.builder().registerMetricReader(server).build()
        ).build()
      ))(sdk => IO.blocking(sdk.close())) // closing the SDK closes the server
      otel <- Resource.eval(OtelJava.fromJOpenTelemetry[IO](sdk))
      meter <- Resource.eval(otel.meterProvider.get("weir-test"))
    yield new Prometheus(meter, port)

  /** A sample: its metric's name in the exposition, its labels, and its value. */
  final case class Sample(name: String, labels: Map[String, String], value: Double)

  /** A scrape's text and its samples. */
  final case class Exposition(text: String, samples: Vector[Sample]):
    /** The samples of `name` whose labels include `labels`. */
    def of(name: String, labels: (String, String)*): Vector[Sample] =
      samples.filter(s => s.name == name && labels.forall((k, v) => s.labels.get(k).contains(v)))

    /** The one value of `name` with `labels`, if exactly one sample has them. */
    def value(name: String, labels: (String, String)*): Option[Double] =
      of(name, labels*) match
        case Vector(s) => Some(s.value)
        case _ => None

    /** The `# TYPE` the exposition gives `name`. */
    def typeOf(name: String): Option[String] =
      text.linesIterator.collectFirst {
        case l if l.startsWith(s"# TYPE $name ") => l.stripPrefix(s"# TYPE $name ")
      }

  object Exposition:
    private val label = """([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"""".r

    def parse(text: String): Exposition =
      val samples = text.linesIterator.filterNot(l => l.isEmpty || l.startsWith("#")).map { line =>
        val (series, value) = line.splitAt(line.lastIndexOf(' '))
        val brace = series.indexOf('{')
        val (name, labels) =
          if brace < 0 then (series, Map.empty[String, String])
          else
            (
              series.take(brace),
              label.findAllMatchIn(series.drop(brace)).map(m => m.group(1) -> m.group(2)).toMap
            )
        Sample(name, labels, value.trim.toDouble)
      }
      Exposition(text, samples.toVector)
