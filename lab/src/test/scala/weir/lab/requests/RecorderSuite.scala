package weir.lab.requests

import cats.effect.{Deferred, IO}
import cats.syntax.all.*
import munit.CatsEffectSuite

/**
 * The client's counters: what each request adds to the overhead histogram and when the client counts as
 * filled. No assertion here depends on how long anything took, only on what was recorded.
 */
class RecorderSuite extends CatsEffectSuite:

  test("the client is filled the first time `concurrency` requests are in flight, not before") {
    for
      recorder <- IO(new Recorder(3, _ => 0L))
      gate <- Deferred[IO, Unit]
      two <- List(1L, 2L).traverse(id => recorder.call(id, gate.get.as(id)).start)
      _ <- IO.cede.untilM_(IO(recorder.inFlight == 2))
      beforeThird = recorder.fillMs
      third <- recorder.call(3L, gate.get.as(3L)).start
      _ <- IO.cede.untilM_(IO(recorder.inFlight == 3))
      afterThird = recorder.fillMs
      _ <- gate.complete(())
      _ <- (third :: two).traverse_(_.joinWithNever)
    yield
      assert(beforeThird.isNaN, beforeThird)
      assert(afterThird >= 0.0, afterThird)
      assertEquals(recorder.succeeded, 3L)
      assertEquals(recorder.fillMs, afterThird) // the first time only
  }

  test(
    "only successful requests have an overhead, and it is their latency minus their delay, never below 0"
  ) {
    // request 1's delay is far beyond its latency: its overhead is clamped to 0; request 2's delay is 0:
    // its overhead is its whole latency; request 3 fails: a latency, no overhead
    val delays = Map(1L -> 1000000L, 2L -> 0L, 3L -> 0L)
    for
      recorder <- IO(new Recorder(10, delays))
      _ <- recorder.call(1L, IO.pure(1L))
      _ <- recorder.call(2L, IO.pure(2L))
      _ <- recorder.call(3L, IO.raiseError(new IllegalStateException("boom")))
    yield
      val latencies = recorder.histogram
      val overheads = recorder.overheadHistogram
      assertEquals((recorder.succeeded, recorder.failed), (2L, 1L))
      assertEquals(latencies.getTotalCount, 3L)
      assertEquals(overheads.getTotalCount, 2L)
      assertEquals(overheads.getMinValue, 0L) // request 1, clamped
      assert(overheads.getMaxValue <= latencies.getMaxValue, (overheads.getMaxValue, latencies.getMaxValue))
      assert(recorder.fillMs.isNaN) // never 10 in flight
      assert(recorder.error.exists(_.contains("boom")), recorder.error)
  }

  test("the blocking form records the same way") {
    val recorder = new Recorder(1, _ => 0L)
    recorder.callBlocking(7L, 7L)
    recorder.callBlocking(8L, throw new IllegalStateException("down"))
    assertEquals((recorder.succeeded, recorder.failed), (1L, 1L))
    assertEquals(recorder.overheadHistogram.getTotalCount, 1L)
    assert(recorder.fillMs >= 0.0, recorder.fillMs) // one in flight is all it may have
    assertEquals(recorder.inFlight, 0L)
  }
