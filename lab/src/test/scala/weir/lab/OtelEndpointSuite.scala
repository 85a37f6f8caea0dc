package weir.lab

import cats.effect.IO
import munit.CatsEffectSuite

import java.net.http.{HttpClient, HttpRequest, HttpResponse}
import java.net.{ServerSocket, URI}
import scala.concurrent.duration.*

class OtelEndpointSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 90.seconds

  private def freePort: IO[Int] = IO.blocking {
    val s = new ServerSocket(0)
    try s.getLocalPort
    finally s.close()
  }

  private val client = HttpClient.newHttpClient()

  private def get(port: Int): IO[Option[String]] =
    IO.blocking {
      val request = HttpRequest.newBuilder(URI.create(s"http://127.0.0.1:$port/metrics")).build()
      client.send(request, HttpResponse.BodyHandlers.ofString()).body
    }.attempt.map(_.toOption)

  // the example's run: a drain after a second, so every outcome but `aborted` has a reason to be there
  private def scrapeDuringExample(port: Int): IO[String] =
    // a scrape once tasks have started: at the run's very first instant a collection can read the histograms
    // before the run is attached to its series and the counters after, and show the counters alone
    val started = raw"(?m)^weir_task_started_total\{[^}]*\} [1-9]".r
    val until = get(port).flatMap {
      case Some(body) if started.findFirstIn(body).isDefined => IO.pure(Some(body))
      case _ => IO.sleep(50.millis).as(None)
    }
    val scrape = until.iterateWhile(_.isEmpty).map(_.get)
    IO.both(OtelEndpoint.around(Some(port))(Example.run(20000, 64, _)), scrape.timeout(60.seconds)).map(_._2)

  test("--otel: the example's metrics are served for Prometheus while it runs, then the endpoint closes") {
    for
      port <- freePort
      body <- scrapeDuringExample(port)
      after <- get(port)
    yield
      val expected = Vector(
        "weir_task_received_total{",
        "weir_task_started_total{",
        "weir_task_finished_total{",
        "weir_task_retries_total{",
        "weir_task_rate_limited_total{",
        "weir_task_in_flight{",
        "weir_buffer_size{",
        "weir_concurrency_limit{",
        "weir_workers{",
        "weir_task_duration_seconds_bucket{",
        "weir_task_duration_seconds_count{",
        "weir_task_duration_seconds_sum{",
        "weir_task_queue_wait_seconds_bucket{",
        "weir_pipeline_name=\"example\"",
        "weir_task_outcome=\"succeeded\""
      )
      val missing = expected.filterNot(body.contains)
      assert(missing.isEmpty, s"missing ${missing.mkString(", ")} in:\n$body")
      assertEquals(after, None, "the endpoint is closed once the command ends")
  }

  test("--otel takes a port: a bad one is refused with its value") {
    assert(Cli.check(Seq("example", "--otel", "9464")).isRight)
    val refused = Cli.check(Seq("soak", "--otel", "70000"))
    assert(refused.left.exists(_.contains("70000")), refused)
    assert(Cli.check(Seq("example", "--otel", "port")).isLeft)
  }
