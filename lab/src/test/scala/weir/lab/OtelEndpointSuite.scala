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

  /** Every series the example's run serves once a task has finished. */
  private val expected = Vector(
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

  // the example's run: a drain after a second, so every outcome but `aborted` has a reason to be there
  private def scrapeDuringExample(port: Int): IO[String] =
    // scrapes until one serves every series, or the endpoint closes once the run has ended: the last body
    // served. The histograms have values only once a task has finished, and a collection at the run's very
    // first instant can read them before the run is attached to its series.
    def scrape(last: Option[String]): IO[String] = get(port).flatMap {
      case Some(body) if expected.forall(body.contains) => IO.pure(body)
      case Some(body) => IO.sleep(50.millis) *> scrape(Some(body))
      case None => last.fold(IO.sleep(50.millis) *> scrape(None))(IO.pure)
    }
    IO.both(
      OtelEndpoint.around(Some(port))(Example.run(20000, 64, _)),
      scrape(None).timeout(60.seconds)
    ).map(_._2)

  test("--otel: the example's metrics are served for Prometheus while it runs, then the endpoint closes") {
    for
      port <- freePort
      body <- scrapeDuringExample(port)
      after <- get(port)
    yield
      val missing = expected.filterNot(body.contains)
      assert(missing.isEmpty, s"missing ${missing.mkString(", ")} in:\n$body")
      assertEquals(after, None, "the endpoint is closed once the command ends")
  }

  test("--otel takes a port: a bad one is refused with its value") {
    assert(Main.check(List("lab", "example", "--otel", "9464")).isRight)
    val refused = Main.check(List("lab", "heap", "--otel", "70000"))
    assert(refused.left.exists(_.contains("70000")), refused)
    assert(Main.check(List("lab", "example", "--otel", "port")).isLeft)
  }
