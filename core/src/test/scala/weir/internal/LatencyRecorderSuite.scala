package weir.internal

import cats.effect.IO
import cats.effect.testkit.TestControl
import fs2.Stream
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}
import weir.{Latency, Limit, Pipeline}

import java.util.concurrent.CountDownLatch
import scala.concurrent.duration.*

class LatencyRecorderSuite extends CatsEffectSuite with ScalaCheckSuite:

  /** What one histogram fed every value directly reports: the summary the recorder must reproduce. */
  private def reference(values: Seq[Long]): Latency =
    val h = new LogHistogram
    values.foreach(h.record)
    h.latency

  /** Records each group of values from a thread of its own, all threads at once. */
  private def recordFromThreads(recorder: LatencyRecorder, groups: List[List[Long]]): Unit =
    val go = new CountDownLatch(1)
    val threads = groups.map { values =>
      val t = new Thread(() => { go.await(); values.foreach(recorder.record) })
      t.start()
      t
    }
    go.countDown()
    threads.foreach(_.join()) // join orders every record before the summary

  private val latencyNanos: Gen[Long] =
    Gen.frequency(
      4 -> Gen.choose(0L, 10000L), // no-op tasks
      4 -> Gen.choose(100000L, 5000000000L), // I/O-like tasks
      1 -> Gen.choose(-1000L, -1L), // a clock that went back
      1 -> Gen.choose(1L, 1L << 45) // about 10 hours
    )

  property("records from many threads at once sum up exactly as one histogram fed every value") {
    Prop.forAll(Gen.choose(1, 6).flatMap(n => Gen.listOfN(n, Gen.listOf(latencyNanos)))) { groups =>
      val recorder = new LatencyRecorder
      recordFromThreads(recorder, groups)
      assertEquals(recorder.summary, reference(groups.flatten))
    }
  }

  property("memory is bounded: threads beyond the first few (blocking handlers) share one histogram") {
    val threads = Gen.choose(LatencyRecorder.OwnHistograms + 1, LatencyRecorder.OwnHistograms + 40)
    Prop.forAll(threads.flatMap(n => Gen.listOfN(n, Gen.nonEmptyListOf(latencyNanos)))) { groups =>
      val recorder = new LatencyRecorder
      recordFromThreads(recorder, groups)
      assertEquals(recorder.histograms, LatencyRecorder.OwnHistograms + 1)
      assertEquals(recorder.summary, reference(groups.flatten))
      assertEquals(recorder.histograms, 0)
    }
  }

  test("percentiles are within the histogram's precision (0.1%) of the exact nearest-rank values") {
    val values = (1L to 100000L).map(_ * 997L) // 997 ns .. 99.7 ms, evenly spread
    val recorder = new LatencyRecorder
    recordFromThreads(recorder, values.grouped(25000).map(_.toList).toList)
    val summary = recorder.summary
    def exact(p: Double) = values((math.ceil(p / 100 * values.size).toInt - 1).max(0))
    def close(reported: FiniteDuration, expected: Long, what: String) =
      assert(
        math.abs(reported.toNanos - expected).toDouble <= expected * 0.001,
        s"$what: $reported vs $expected ns"
      )
    assertEquals(summary.count, 100000L)
    close(summary.p50, exact(50), "p50")
    close(summary.p90, exact(90), "p90")
    close(summary.p99, exact(99), "p99")
    close(summary.p999, exact(99.9), "p99.9")
    close(summary.max, values.last, "max")
    close(summary.mean, values.sum / values.size, "mean")
  }

  test("nothing recorded: the empty summary; a negative latency counts as zero") {
    val recorder = new LatencyRecorder
    assertEquals(recorder.summary, Latency.empty)
    recorder.record(-5L)
    assertEquals(recorder.summary, reference(List(0L)))
  }

  test("a run's summary has every task's latency, from its start to the end of its handler") {
    // task i sleeps i ms, 64 at a time: in virtual time each latency is exactly i ms
    val run = Pipeline(Stream.range(1, 1001).covary[IO])
      .process(i => IO.sleep(i.millis))
      .withLimit(Limit.fixed(64))
      .run
    TestControl.executeEmbed(run).map { summary =>
      assertEquals(summary.latency, reference((1L to 1000L).map(_ * 1000000L)))
      assertEquals(summary.latency.count, 1000L)
    }
  }

  property("the live histogram counts every value ever recorded, across summaries and threads") {
    // summaries hand one thread's histogram on as the merge and keep the first merge as the running sum:
    // whatever the mix of threads, the sum and each summary still count each value once
    val rounds = Gen.choose(1, 4).flatMap(n =>
      Gen.listOfN(n, Gen.choose(1, 4).flatMap(t => Gen.listOfN(t, Gen.listOf(latencyNanos))))
    )
    Prop.forAll(rounds, Gen.listOf(latencyNanos)) { (rounds, after) =>
      val recorder = new LatencyRecorder
      rounds.foreach { groups =>
        recordFromThreads(recorder, groups)
        assertEquals(recorder.summary, reference(groups.flatten))
      }
      recordFromThreads(recorder, List(after))
      assertEquals(recorder.histogram.latency, reference(rounds.flatten.flatten ++ after))
    }
  }

  test("a summary lets the threads' histograms go: the next one counts only what was recorded after it") {
    val recorder = new LatencyRecorder
    recordFromThreads(recorder, List(List(1000L, 2000L), List(3000L)))
    assertEquals(recorder.summary.count, 3L)
    assertEquals(recorder.summary, Latency.empty)
    recordFromThreads(recorder, List(List(7000L)))
    recorder.record(9000L)
    assertEquals(recorder.summary, reference(List(7000L, 9000L)))
  }
