package weir

import cats.effect.testkit.TestControl
import cats.effect.{IO, Ref}
import cats.syntax.all.*
import fs2.Stream
import munit.CatsEffectSuite

import scala.concurrent.duration.*

/** A pipeline under a rate limit, in virtual time: every start is checked against its exact due time. */
class RateLimitedPipelineSuite extends CatsEffectSuite:

  /** Runs `n` no-op tasks through `pipeline`'s settings and records the virtual time each one started. */
  private def startTimes(
      n: Int,
      limiter: RateLimiter[IO],
      limit: Int,
      handler: FiniteDuration => IO[Unit] = _ => IO.unit
  ): IO[(Summary[Int], Vector[FiniteDuration])] =
    for
      starts <- Ref.of[IO, Vector[FiniteDuration]](Vector.empty)
      summary <- Pipeline(Stream.range(0, n).covary[IO])
        .process(_ => IO.monotonic.flatTap(t => starts.update(_ :+ t)).flatMap(handler))
        .withLimit(Limit.fixed(limit))
        .withRateLimit(limiter)
        .run
      times <- starts.get
    yield (summary, times.sorted)

  test("tasks start at the limiter's pace: the burst at once, then one every 1/rate, exactly") {
    val run = RateLimiter.tokenBucket[IO](100, burst = 10).flatMap(l => startTimes(1000, l, limit = 50))
    TestControl.executeEmbed(run).map { (summary, times) =>
      assertEquals(summary.succeeded, 1000L)
      assertEquals(times.take(10), Vector.fill(10)(Duration.Zero))
      assertEquals(times.drop(10), (1 to 990).toVector.map(i => (i * 10).millis))
      assertEquals(summary.elapsed, 9.9.seconds)
    }
  }

  test("50,000 tasks/s: 20,000 tasks through a limit of 64 end at exactly (20,000 - burst) / rate") {
    val run =
      RateLimiter.tokenBucket[IO](50000, burst = 100).flatMap(l => startTimes(20000, l, limit = 64))
    TestControl.executeEmbed(run).map { (summary, times) =>
      assertEquals(summary.succeeded, 20000L)
      assertEquals(times.last, ((20000 - 100) * 20).micros)
      // never ahead of the bucket: start i (0-based) at or after (i + 1 - burst) / rate
      times.zipWithIndex.foreach((t, i) =>
        assert(t >= (math.max(0, i + 1 - 100) * 20).micros, s"start $i at $t")
      )
    }
  }

  test("the rate caps starts, the limit caps in-flight: slow tasks under a fast rate are limit-bound") {
    // 1 s tasks, limit 4, 1000/s: four start at once, the next four when they finish
    val run = RateLimiter.tokenBucket[IO](1000, burst = 1000).flatMap(l =>
      startTimes(12, l, limit = 4, _ => IO.sleep(1.second))
    )
    TestControl.executeEmbed(run).map { (summary, times) =>
      assertEquals(times, Vector(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2).map(_.seconds))
      assertEquals(summary.elapsed, 3.seconds)
    }
  }

  test("two pipelines sharing one limiter share its rate") {
    val run =
      for
        l <- RateLimiter.tokenBucket[IO](10, burst = 1)
        both <- (startTimes(10, l, limit = 8), startTimes(10, l, limit = 8)).parTupled
      yield both
    TestControl.executeEmbed(run).map { case ((a, ta), (b, tb)) =>
      assertEquals(a.succeeded + b.succeeded, 20L)
      assertEquals((ta ++ tb).sorted, (0 until 20).toVector.map(i => (i * 100).millis))
      assertEquals(a.elapsed.max(b.elapsed), 1.9.seconds)
    }
  }

  test("each retry waits for a permit of its own") {
    val run =
      for
        l <- RateLimiter.tokenBucket[IO](1, burst = 1)
        calls <- Ref.of[IO, Vector[FiniteDuration]](Vector.empty)
        s <- Pipeline(Stream.emit(1).covary[IO])
          .process(_ =>
            IO.monotonic.flatMap(t => calls.updateAndGet(_ :+ t)).flatMap(c =>
              IO.raiseError(new java.io.IOException("busy")).whenA(c.size < 3)
            )
          )
          .withRetry(Retry.exponential(100.millis, maxAttempts = 3, factor = 1.0, jitter = Retry.Jitter.Off))
          .withRateLimit(l)
          .run
        c <- calls.get
      yield (s, c)
    TestControl.executeEmbed(run).map { (s, calls) =>
      assertEquals(s.succeeded, 1L)
      assertEquals(s.retries, 2L)
      // the backoff (100 ms) is shorter than a permit's interval (1 s): the permits set the pace
      assertEquals(calls, Vector(0.seconds, 1.second, 2.seconds))
    }
  }

  test("a drain returns the tasks waiting for a permit at once, as not started") {
    val run =
      for
        l <- RateLimiter.tokenBucket[IO](1, burst = 2)
        summary <- Pipeline(Stream.range(0, 100).covary[IO])
          .process(_ => IO.sleep(10.seconds))
          .withLimit(Limit.fixed(5))
          .withBuffer(10)
          .withRateLimit(l)
          .start
          .use(running => IO.sleep(1500.millis) *> running.drain(1.minute))
      yield summary
    TestControl.executeEmbed(run).map { s =>
      // granted at 0, 0 and 1 s; those three finish at 10 and 11 s; the rest never start
      assertEquals(s.succeeded, 3L)
      // the source is not read any further: 5 tasks taken by workers, 10 buffered, 1 waiting to be
      assertEquals(s.received, 16L)
      assertEquals(s.notStarted, 13L)
      assertEquals(s.elapsed, 11.seconds)
      assertEquals(s.stop, StopReason.Drained)
    }
  }

  test("releasing a run while workers wait for permits loses no task") {
    val run =
      for
        l <- RateLimiter.tokenBucket[IO](1, burst = 1)
        running <- Pipeline(Stream.range(0, 50).covary[IO])
          .process(_ => IO.unit)
          .withLimit(Limit.fixed(8))
          .withRateLimit(l)
          .start
          .use(r => IO.sleep(3500.millis).as(r))
        s <- running.join
      yield s
    TestControl.executeEmbed(run).map { s =>
      assertEquals(s.succeeded, 4L) // permits at 0, 1, 2 and 3 s
      assertEquals(s.received, 50L)
      assertEquals(s.notStarted, 46L)
      assertEquals(s.stop, StopReason.Released)
    }
  }
