package weir.guide

import cats.effect.IO
import cats.effect.testkit.TestControl
import cats.effect.unsafe.IORuntime
import cats.syntax.all.*
import munit.CatsEffectSuite
import weir.StopReason
import weir.runtime.WeirRuntime

import scala.concurrent.duration.*

/**
 * Runs the user guide's and the README's examples (weir.guide) and checks what the guide says they do:
 * in virtual time where the example is timing, on weir's runtime where it draws to the console.
 */
class GuideExamplesSuite extends CatsEffectSuite:

  // timer-heavy examples on the real clock: the runtime that keeps timers off the compute pool
  override implicit lazy val munitIORuntime: IORuntime = WeirRuntime.unsafeCreate()._1

  override def munitIOTimeout: Duration = 60.seconds

  test("sources: every producer's tasks are received once, whichever the source") {
    TestControl.executeEmbed(
      for
        merged <- SourcesExample.run
        several <- weir.Pipeline(SourcesExample.several).process(SourcesExample.handle).run
        paged <- weir.Pipeline(SourcesExample.paged).process(SourcesExample.handle).run
      yield
        assertEquals((merged.received, merged.succeeded), (2000L, 2000L))
        assertEquals(several.succeeded, 1000L)
        assertEquals(paged.succeeded, 1000L)
    )
  }

  test("testing: a handler gets a job built by hand; its last attempt warns with the tenant of the headers") {
    ReceiptHandlerTest.lastAttemptWarns.map(w => assertEquals(w, List("receipt 7 of acme")))
  }

  test(
    "testing: a built job's completeIn completes once in a real transaction; a worker works a test schema"
  ) {
    (ReceiptIntegrationTest.completesOnce, ReceiptIntegrationTest.workedThrough).tupled.map { (once, sent) =>
      assertEquals(once, (true, false, 1))
      assertEquals(sent, 350L)
    }
  }

  test("testing: a Kafka handler counts records built by hand, and the same records through a broker") {
    (ClickCounterTest.countsByPage, ClickCounterBrokerTest.throughABroker).tupled.map { (byHand, viaBroker) =>
      assertEquals(byHand, Map("home" -> 2, "cart" -> 1))
      assertEquals(viaBroker, Map("home" -> 2, "cart" -> 1))
    }
  }

  test("writing a source: acknowledged, interrupted and back, then handed back by the drain") {
    TestControl.executeEmbed(TrackedSourceExample.run).map { (summary, acknowledged, waiting) =>
      assertEquals((acknowledged, waiting), (Vector("pay", "refund", "audit"), Vector("ship")))
      assertEquals(
        (summary.succeeded, summary.failed, summary.unstarted.map(_.value)),
        (2L, 2L, Vector("ship"))
      )
      assertEquals(summary.unstarted.map(_.attempt), Vector(2))
    }
  }

  test("interrupt: the stopped task ends interrupted, once, and the others run their course") {
    TestControl.executeEmbed(InterruptExample.run.flatMap(s => IO.monotonic.map(s -> _))).map { (s, now) =>
      assertEquals((s.succeeded, s.failed, s.retries), (2L, 1L, 0L))
      assertEquals(
        s.failures.map(f => (f.task.name, f.disposition, f.error.getMessage)),
        Vector(("weekly", weir.Disposition.Interrupted, "task interrupted: the user stopped it"))
      )
      assertEquals(now, 10.seconds)
    }
  }

  test("limits: fixed, resized and adaptive runs finish every task") {
    TestControl.executeEmbed(
      for
        fixed <- LimitsExample.fixed
        resized <- LimitsExample.resized
        adaptive <- LimitsExample.adaptive
      yield List(fixed, resized, adaptive).foreach(s => assertEquals(s.succeeded, 10_000L))
    )
  }

  test("pipe form: every photo has one outcome; with input order the thumbnails come in order") {
    TestControl
      .executeEmbed(PipeExample.anyOrder.compile.toVector.both(PipeExample.inOrder.compile.toVector))
      .map { (outcomes, thumbs) =>
        assertEquals(outcomes.map(_.task).sorted, Vector.range(0, 500))
        assertEquals(thumbs, Vector.tabulate(500)(i => s"thumb $i"))
      }
  }

  test("order: the outcomes come in input order") {
    TestControl
      .executeEmbed(OrderExample.inOrder.compile.toVector)
      .map(pages => assertEquals(pages, Vector.tabulate(1000)(i => s"page $i")))
  }

  test("keys: every transfer is booked") {
    TestControl.executeEmbed(KeysExample.run).map(s => assertEquals(s.succeeded, 1000L))
  }

  test("rate: two pipelines sharing a limiter end at (600 - burst) / rate, exactly") {
    TestControl.executeEmbed(RateExample.run.timed).map { case (elapsed, (a, b)) =>
      assertEquals(a.succeeded + b.succeeded, 600L)
      assertEquals(elapsed, 1100.millis)
    }
  }

  test("retries: calls that succeed at once need no retry") {
    TestControl.executeEmbed(RetriesExample.run).map { s =>
      assertEquals((s.succeeded, s.retries, s.timeouts), (1000L, 0L, 0L))
    }
  }

  test("failure policies: skip records, dead letters reach the sink, fail-fast stops") {
    for
      skipped <- FailuresExample.skipping
      dead <- FailuresExample.deadLettering
      failedFast <- FailuresExample.failingFast
    yield
      assertEquals((skipped.succeeded, skipped.failed), (3L, 1L))
      assertEquals(dead, Vector("x"))
      assert(failedFast.stop.isInstanceOf[StopReason.FailedFast], failedFast.stop)
      assertEquals(failedFast.received, failedFast.succeeded + failedFast.failed + failedFast.notStarted)
  }

  test("drain: the tasks never started come back; a release stops the run") {
    TestControl.executeEmbed(DrainExample.drained <* DrainExample.released).map { unstarted =>
      assert(unstarted.nonEmpty && unstarted.size < 100_000, unstarted.size)
    }
  }

  test("observe: metrics, a progress bar and the summary of every task") {
    ObserveExample.run.map { s =>
      assertEquals((s.received, s.succeeded), (20_000L, 20_000L))
      assertEquals(s.stop, StopReason.Completed)
    }
  }

  test("OpenTelemetry: the run reports to the SDK the environment configures (here: no exporter)") {
    val none = Vector("otel.metrics.exporter", "otel.traces.exporter", "otel.logs.exporter")
    IO(none.foreach(sys.props.update(_, "none"))) *>
      OtelExample.run
        .map(s => assertEquals((s.received, s.succeeded), (10_000L, 10_000L)))
        .guarantee(IO(none.foreach(sys.props.remove)))
  }

  test("runtime: the app runs its job and a runtime of one's own runs one") {
    NightlyJob.run *> IO.blocking(RuntimeExample.runOnce(IO.pure(42))).map(assertEquals(_, 42))
  }

  test("the README's quick start drains after a second") {
    TestControl.executeEmbed(QuickStart.run.timed).map((elapsed, _) => assert(elapsed < 7.seconds, elapsed))
  }
