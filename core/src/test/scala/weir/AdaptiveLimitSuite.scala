package weir

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import fs2.Stream
import munit.CatsEffectSuite
import weir.internal.AdaptiveController
import weir.internal.AdaptiveController.Sample

import scala.concurrent.duration.*

/**
 * [[Limit.adaptive]]: the algorithms' arithmetic, the controller's windows, and the controller in a
 * pipeline, with exact expectations in virtual time.
 */
class AdaptiveLimitSuite extends CatsEffectSuite:

  private val ms = 1000000L

  private def window(measured: Int, drops: Int, mean: Long, min: Long, baseline: Long, maxInFlight: Int) =
    AdaptiveAlgorithm.Window(measured, drops, mean * ms, min * ms, baseline * ms, maxInFlight)

  // ---- the arithmetic ----------------------------------------------------------------------------

  test("gradient: no queueing grows by √limit; latency above the baseline shrinks in proportion") {
    val g = AdaptiveAlgorithm.gradient()
    assertEquals(g.next(16, window(10, 0, 10, 10, 10, 16)), 20.0)
    assertEquals(g.next(100, window(10, 0, 20, 20, 10, 100)), 60.0) // gradient 0.5
    assertEquals(g.next(100, window(10, 0, 40, 30, 10, 100)), 60.0) // never below 0.5
    assertEquals(g.next(100, window(10, 0, 20, 16, 10, 100)), 72.5) // gradient 0.625: the window's least
    assertEquals(g.next(100, window(10, 0, 50, 10, 10, 100)), 110.0) // slow tasks among fast ones: no queue
  }

  test("gradient: tolerance, drops, an unused limit, a window of drops only") {
    assertEquals(AdaptiveAlgorithm.gradient(tolerance = 1.5).next(100, window(10, 0, 12, 11, 10, 100)), 110.0)
    assertEquals(AdaptiveAlgorithm.gradient(tolerance = 1.5).next(100, window(10, 0, 40, 30, 10, 100)), 60.0)
    val g = AdaptiveAlgorithm.gradient(backoff = 0.8)
    assertEquals(g.next(100, window(10, 1, 10, 10, 10, 100)), 80.0) // a drop caps at limit × backoff
    assertEquals(g.next(100, window(10, 0, 10, 10, 10, 49)), 100.0) // fewer than half used: no growth
    assertEquals(g.next(100, window(10, 0, 20, 20, 10, 49)), 60.0) // ... but it still shrinks
    assertEquals(g.next(100, window(0, 5, 0, 0, 10, 100)), 80.0)
  }

  test("aimd: +increase after a clean window, × backoff after a drop or a slow window") {
    val a = AdaptiveAlgorithm.aimd(increase = 2, backoff = 0.5, latencyThreshold = Some(15.millis))
    assertEquals(a.next(10, window(10, 0, 10, 10, 10, 10)), 12.0)
    assertEquals(a.next(10, window(10, 1, 10, 10, 10, 10)), 5.0)
    assertEquals(a.next(10, window(10, 0, 16, 10, 10, 10)), 5.0)
    assertEquals(a.next(10, window(10, 0, 10, 10, 10, 4)), 10.0)
    assertEquals(AdaptiveAlgorithm.aimd().next(10, window(10, 0, 500, 10, 10, 10)), 11.0)
  }

  // ---- the controller's windows --------------------------------------------------------------------

  private def spec(algorithm: AdaptiveAlgorithm = AdaptiveAlgorithm.gradient(), minSamples: Int = 3) =
    Limit.adaptive(initial = 16, max = 100, algorithm = algorithm, minSamples = minSamples)
      .asInstanceOf[Limit.Adaptive]

  private def busy(st: AdaptiveController.State, n: Int) = (1 to n).foldLeft(st)((x, _) => x.begin)

  private def run(s: Limit.Adaptive, state: AdaptiveController.State, events: (Long, Long, Sample)*) =
    events.foldLeft(state)((st, e) => st.end(s, e._1 * ms, e._2 * ms, e._3)._1)

  test("a window closes at the first sample that has both minSamples and the window's length") {
    val s = spec()
    val st0 = busy(AdaptiveController.initial(s, 0L), 16)
    val three = run(s, st0, (0, 10, Sample.Measured), (0, 20, Sample.Measured), (0, 30, Sample.Measured))
    assertEquals((three.applied, three.measured), (16, 3)) // 3 samples, but only 30 ms
    val (closed, changed) = three.begin.end(s, 0L, 100 * ms, Sample.Measured)
    assertEquals(
      (closed.applied, changed, closed.windowStart, closed.measured),
      (20, true, 100 * ms, 0)
    ) // least 10 ms = baseline: 16 + √16
    assertEquals(closed.baseline, 10 * ms)
  }

  test("only attempts that began in the window count; ignored failures count for nothing") {
    val s = spec()
    val st0 = AdaptiveController.initial(s, 0L).copy(windowStart = 50 * ms).begin.begin.begin
    val st1 = run(s, st0, (40, 200, Sample.Measured), (49, 200, Sample.Drop), (60, 200, Sample.Ignored))
    assertEquals((st1.measured, st1.drops, st1.inFlight, st1.applied), (0, 0, 0, 16))
  }

  test("drops shrink the limit by the backoff; rounding down; min and max hold") {
    val s = Limit.adaptive(initial = 16, min = 12, minSamples = 1).asInstanceOf[Limit.Adaptive]
    val st = (1 to 4).foldLeft(AdaptiveController.initial(s, 0L)) { (st, i) =>
      st.begin.end(s, (i - 1) * 100 * ms, i * 100 * ms, Sample.Drop)._1
    }
    assertEquals(st.applied, 12) // 16 → 14.4 → 12.96 → 12 (11.66 clamped to min) → 12
    val up = Limit.adaptive(initial = 30, max = 32, minSamples = 1).asInstanceOf[Limit.Adaptive]
    val st2 = (1 to 3).foldLeft(AdaptiveController.initial(up, 0L)) { (st, i) =>
      busy(st, 30).end(up, (i - 1) * 100 * ms, i * 100 * ms, Sample.Measured)._1
    }
    assertEquals(st2.applied, 32)
  }

  test("a probe halves the limit for one window once the baseline went unconfirmed for the interval") {
    val s = spec(AdaptiveAlgorithm.gradient(probeInterval = Some(1.second)), minSamples = 1)
    // the first window sets the baseline to 10 ms at t = 100 ms; then latency is 11 ms: never confirmed
    val first = busy(AdaptiveController.initial(s, 0L), 40).end(s, 90 * ms, 100 * ms, Sample.Measured)._1
    assertEquals((first.baseline, first.confirmedAt, first.applied), (10 * ms, 100 * ms, 20))
    def at(t: Long, st: AdaptiveController.State) =
      busy(st, 40).end(s, t * ms - 11 * ms, t * ms, Sample.Measured)._1
    val before = (2 to 10).foldLeft(first)((st, i) => at(i * 100L, st))
    assertEquals(before.probing, None)
    val probe = at(1100, before)
    assertEquals(probe.probing, Some(probe.estimate))
    assertEquals(probe.applied, (probe.estimate / 2).toInt)
    // the probe window's least latency (12 ms) is the new baseline, and the estimate comes back
    val after = busy(probe, 40).end(s, 1188 * ms, 1200 * ms, Sample.Measured)._1
    assertEquals((after.baseline, after.probing, after.applied), (12 * ms, None, probe.estimate.toInt))
  }

  // ---- in a pipeline -----------------------------------------------------------------------------

  /** The limit seen at each of `times`, with tasks of `handler` from an endless source. */
  private def limits(
      limit: Limit,
      handler: Int => IO[Unit],
      times: Vector[FiniteDuration],
      timeout: Option[FiniteDuration] = None
  ): IO[Vector[Int]] =
    val pipeline = Pipeline(Stream.iterate(0)(_ + 1).covary[IO]).process(handler).withLimit(limit)
    timeout.fold(pipeline)(pipeline.withTaskTimeout).start.use { running =>
      times.foldLeft(IO.pure(Vector.empty[Int])) { (acc, t) =>
        acc.flatMap(seen =>
          IO.monotonic.flatMap(now => IO.sleep(t - now)) *> running.snapshot.map(seen :+ _.limit)
        )
      } <* running.drain(Duration.Zero)
    }

  private val middles = Vector.tabulate(6)(i => (50 + 100 * i).millis)

  test("no queueing: the limit grows by √limit per window, one window every 100 ms, up to max") {
    val run = limits(Limit.adaptive(initial = 16, max = 30), _ => IO.sleep(10.millis), middles)
    // 16 → 20 → 24.47 → 29.42 → 34.84 (clamped to 30)
    TestControl.executeEmbed(run).assertEquals(Vector(16, 20, 24, 29, 30, 30))
  }

  test("errors are drops: the limit shrinks by the backoff each window; ignored errors change nothing") {
    val boom = (_: Int) => IO.sleep(10.millis) *> IO.raiseError[Unit](new IllegalStateException("overloaded"))
    TestControl.executeEmbed(limits(Limit.adaptive(initial = 16), boom, middles))
      .assertEquals(Vector(16, 14, 12, 11, 10, 9)) *> { // 16 × 0.9^k, rounded down
      val notMine = Limit.adaptive(initial = 16, dropOn = !_.isInstanceOf[IllegalStateException])
      TestControl.executeEmbed(limits(notMine, boom, middles)).assertEquals(Vector.fill(6)(16))
    }
  }

  test("timeouts are drops: an attempt cut by the task timeout shrinks the limit") {
    val slow = (_: Int) => IO.sleep(1.second)
    TestControl.executeEmbed(limits(Limit.adaptive(initial = 16), slow, middles, Some(100.millis)))
      .assertEquals(Vector(16, 14, 12, 11, 10, 9))
  }

  /**
   * An upstream that serves `capacity` requests at once in `base` and queues the rest: a request that
   * arrives with `n` in flight (itself included) takes `base × max(1, n / capacity)`.
   */
  private def upstream(base: FiniteDuration, capacity: Ref[IO, Int], inFlight: Ref[IO, Int]) = (_: Int) =>
    (inFlight.updateAndGet(_ + 1), capacity.get).flatMapN { (n, k) =>
      IO.sleep(if n <= k then base else base * n.toLong / k.toLong)
    }.guarantee(inFlight.update(_ - 1))

  /** TestControl picks among fibers due at the same instant at random: a fixed seed makes it repeatable. */
  private val seed = Some(java.util.Base64.getEncoder.encodeToString("1".getBytes("UTF-8")))

  test("a hidden capacity K: the limit settles within [K, 1.5 K] in 1.5 s and follows K when it changes") {
    val phases = Vector(40, 20, 60) // K for 5 s each
    val run =
      for
        capacity <- IO.ref(phases.head)
        inFlight <- IO.ref(0)
        seen <- Pipeline(Stream.iterate(0)(_ + 1).covary[IO])
          .process(upstream(20.millis, capacity, inFlight))
          .withLimit(Limit.adaptive(initial = 16, max = 1000))
          .start
          .use { running =>
            val watch = running.metrics(100.millis).map(s => (s.elapsed, s.limit)).compile.toVector
            watch.background.use { seen =>
              phases.traverse_(k => capacity.set(k) *> IO.sleep(5.seconds)) *> running.drain(Duration.Zero) *>
                seen.flatMap(_.embedNever)
            }
          }
      yield seen
    TestControl.executeEmbed(run, seed = seed).map { seen =>
      phases.zipWithIndex.foreach { (k, i) =>
        val from = (5 * i).seconds + 1500.millis
        val settled = seen.filter((t, _) => t >= from && t < (5 * i + 5).seconds)
        // a baseline probe halves the limit for one window, at most every 10 s
        val (in, out) = settled.partition((_, l) => l >= k && l <= k * 3 / 2)
        assert(
          out.size <= 1 && out.forall((_, l) => l >= k / 2),
          s"K = $k: outside [K, 1.5 K]: $out in $settled"
        )
        assert(in.nonEmpty)
      }
    }
  }

  test("bad settings throw nothing when built, and each one is named by the run that uses them") {
    def refused(limit: => Limit, messages: String*) =
      assertEquals(limit.errors, messages.toList)
    refused(Limit.adaptive(min = 0), "adaptive limit: min must be > 0, was: 0")
    refused(
      Limit.adaptive(min = 5, max = 4, initial = 4),
      "adaptive limit: max must be >= min (5), was: 4",
      "adaptive limit: initial must be within [min, max] = [5, 4], was: 4"
    )
    refused(
      Limit.adaptive(initial = 2000),
      "adaptive limit: initial must be within [min, max] = [1, 1000], was: 2000"
    )
    refused(
      Limit.adaptive(initial = 0),
      "adaptive limit: initial must be within [min, max] = [1, 1000], was: 0"
    )
    refused(Limit.adaptive(window = Duration.Zero), "adaptive limit: window must be > 0, was: 0 days")
    refused(Limit.adaptive(minSamples = -1), "adaptive limit: minSamples must be > 0, was: -1")
    def algorithm(a: AdaptiveAlgorithm, message: String) =
      assertEquals(a.errors, List(message))
      refused(Limit.adaptive(algorithm = a), s"adaptive limit: $message")
    algorithm(AdaptiveAlgorithm.gradient(tolerance = Double.NaN), "gradient tolerance must be >= 1, was: NaN")
    algorithm(AdaptiveAlgorithm.gradient(tolerance = 0.5), "gradient tolerance must be >= 1, was: 0.5")
    algorithm(AdaptiveAlgorithm.gradient(backoff = 1.0), "backoff must be in (0, 1), was: 1.0")
    algorithm(AdaptiveAlgorithm.aimd(backoff = Double.NaN), "backoff must be in (0, 1), was: NaN")
    algorithm(
      AdaptiveAlgorithm.gradient(probeInterval = Some(-1.second)),
      "probe interval must be > 0, was: -1 seconds"
    )
    algorithm(AdaptiveAlgorithm.aimd(increase = 0), "AIMD increase must be > 0, was: 0.0")
    algorithm(
      AdaptiveAlgorithm.aimd(latencyThreshold = Some(Duration.Zero)),
      "latency threshold must be > 0, was: 0 days"
    )
    val bad =
      Limit.adaptive(min = 0, window = Duration.Zero, algorithm = AdaptiveAlgorithm.aimd(increase = 0))
    Pipeline(Stream.range(0, 3).covary[IO]).process(IO.pure).withLimit(bad).run
      .intercept[InvalidSettings]
      .map(e =>
        assertEquals(
          e.getMessage,
          "invalid Pipeline: adaptive limit: min must be > 0, was: 0; adaptive limit: window must be > 0, " +
            "was: 0 days; adaptive limit: AIMD increase must be > 0, was: 0.0"
        )
      )
  }
