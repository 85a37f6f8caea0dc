package weir.lab
package compare

import cats.syntax.all.*
import munit.CatsEffectSuite
import weir.lab.compare.approaches.Approach
import weir.lab.compare.report.{Charts, JsonReport, Page}
import weir.lab.report.LivePage

import scala.concurrent.duration.*

/** `compare`'s HTML page while the run goes and at its end, from real measurements of a small workload. */
class PageSuite extends CatsEffectSuite:

  private val env = JsonReport.Environment.current(seed = 0L, clock = "virtual", timeScale = 1.0, runs = 1)
  private val approaches = Vector("batch", "weir").map(n => Approach.all.find(_.name == n).get)

  private def render(ms: Vector[Measurement], stage: LivePage.Stage) =
    val workloads = Vector(Fixtures.small)
    Page.render(env, workloads, ms, Charts.of(env, workloads, ms), stage, expected = 4)

  test("a page drawn while the run goes reloads itself and says how far the run got; the last one does not") {
    approaches.traverse(Fixtures.measure(_, Fixtures.smallPlan)).map { ms =>
      val running = render(ms.take(1), LivePage.Stage.Running(2.seconds))
      assert(running.contains("""<meta http-equiv="refresh" content="2">"""), running.take(600))
      assert(running.contains("Running: 1 of 4 measurements finished"), running.take(1200))
      val last = render(ms, LivePage.Stage.Finished)
      assert(!last.contains("http-equiv=\"refresh\""), last.take(600))
      assert(!last.contains("measurements finished"), last.take(1200))
      val stopped = render(ms, LivePage.Stage.Stopped)
      assert(!stopped.contains("http-equiv=\"refresh\""), stopped.take(600))
      assert(stopped.contains("Stopped before the end: 2 of 4 measurements finished."), stopped.take(1200))
    }
  }

  test("the page holds the load shape's table and its charts, each named, as finished so far") {
    approaches.traverse(Fixtures.measure(_, Fixtures.smallPlan)).map { ms =>
      assert(ms.forall(_.status == Status.Ok), ms.map(_.status))
      def ids(page: String) = """id="chart-([^"]+)"""".r.findAllMatchIn(page).map(_.group(1)).toList
      val first = render(ms.take(1), LivePage.Stage.Running(2.seconds))
      assertEquals(ids(first), List("ratios", "timeline-small", "timeline-small-batch"))
      val last = render(ms, LivePage.Stage.Finished)
      assertEquals(ids(last), List("ratios", "timeline-small", "timeline-small-batch", "timeline-small-weir"))
      assert(last.contains("""<table id="table-small">"""), last.take(2000))
      List("ideal (2 producers)", "batch", "weir").foreach(a => assert(last.contains(s"<tr><td>$a</td>"), a))
    }
  }
