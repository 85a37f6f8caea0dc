package weir.lab.report

import cats.effect.IO
import cats.effect.unsafe.IORuntime
import munit.CatsEffectSuite
import weir.runtime.WeirRuntime
import weir.lab.adaptive.AdaptiveLab
import weir.lab.compare.Compare
import weir.lab.requests.Requests

import java.nio.file.{Files, Path}
import scala.concurrent.duration.*

/**
 * Each lab's `--html` page, from a quick run in this JVM, loaded in headless Chromium: every chart is there
 * and its image decoded (the page's own script marks it), the tables hold their rows, and the finished page
 * does not reload itself.
 *
 * Without a `chromium` on PATH the tests are skipped, unless `CI=true`: CI installs the browser, so there
 * a missing one is a failure.
 */
class HtmlInChromiumSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 180.seconds
  // the delay server's many sleeping fibers (see RequestsRunSuite)
  override implicit lazy val munitIORuntime: IORuntime = WeirRuntime.unsafeCreate()._1

  private val browserTimeout = 60.seconds

  private def browser: Path =
    val found = Chromium.find
    if found.isEmpty && sys.env.get("CI").contains("true") then
      fail("CI=true but no chromium on PATH: .ci/run installs Debian's chromium package")
    assume(
      found.isDefined,
      "no chromium on PATH (Debian package `chromium`): the page is not loaded in a browser"
    )
    found.get

  private def page(name: String): IO[Path] =
    IO.blocking(Files.createTempDirectory("weir-html").resolve(s"$name.html"))

  private def load(chromium: Path, file: Path): IO[Dom] =
    IO.blocking(Dom(Chromium.dumpDom(chromium, file, browserTimeout)))

  /** The checks every lab's page must pass in the browser. */
  private def assertRendered(dom: Dom, charts: List[String]): Unit =
    assertEquals(dom.charts.map(_._1), charts, "the charts, in order")
    assertEquals(dom.charts.filter(_._2 != Some("yes")), Nil, "charts whose image did not decode")
    assertEquals(dom.body.get("data-charts"), Some(charts.size.toString), "the page's script ran")
    assert(!dom.html.contains("http-equiv=\"refresh\""), "a finished page does not reload")

  test("compare --html: the charts of every load shape render, and the tables hold every approach") {
    val chromium = browser // before the run: without a browser there is nothing to check
    val shapes = List("slow-producer", "balanced", "slow-consumer")
    for
      file <- page("compare")
      settings =
        Compare.parse(List("--quick", "--approaches", "batch,weir", "--no-live", "--html", file.toString))
          .fold(e => fail(e), _.getOrElse(fail("no settings")))
      measurements <- Compare.execute(settings)
      dom <- load(chromium, file)
    yield
      assert(measurements.forall(_.status.label == "ok"), measurements.map(_.status))
      assertRendered(
        dom,
        "ratios" :: shapes.flatMap(s => List(s"timeline-$s", s"timeline-$s-batch", s"timeline-$s-weir"))
      )
      shapes.foreach { s =>
        assertEquals(
          dom.firstColumn(s"table-$s"),
          List("approach", "ideal (1 producer)", "ideal (2 producers)", "batch", "weir"),
          s
        )
      }
      assertEquals(dom.firstColumn("table-matrix"), List("approach", "batch", "weir"))
  }

  test("requests --html: the approach's chart renders, and the table holds its row") {
    val chromium = browser // before the run: without a browser there is nothing to check
    for
      file <- page("requests")
      settings = Requests.parse(List(
        "--tasks",
        "300",
        "--limit",
        "50",
        "--max-delay",
        "40ms",
        "--server",
        "same",
        "--approaches",
        "weir",
        "--no-progress",
        "--html",
        file.toString
      )).getOrElse(fail("not parsed"))
      results <- Requests.run(settings)
      dom <- load(chromium, file)
    yield
      assertEquals(results.map(_.status), Vector("ok"))
      assertRendered(dom, List("requests-weir"))
      assertEquals(dom.firstColumn("table-results"), List("approach", "weir"))
  }

  test("adaptive --html: the limits' chart renders, and the table holds every limit") {
    val chromium = browser // before the run: without a browser there is nothing to check
    for
      file <- page("adaptive")
      settings = AdaptiveLab.parse(List(
        "--quick",
        "--duration",
        "10s",
        "--capacity-change",
        "5s:10",
        "--fixed",
        "20",
        "--algorithm",
        "gradient",
        "--html",
        file.toString
      )).fold(e => fail(s"not parsed: $e"), identity)
      _ <- AdaptiveLab.execute(settings)
      dom <- load(chromium, file)
    yield
      assertRendered(dom, List("adaptive"))
      assertEquals(dom.firstColumn("table-results"), List("limit", "fixed 20", "adaptive gradient"))
  }
