package weir

import cats.effect.IO
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import fs2.Stream
import munit.CatsEffectSuite

import scala.concurrent.duration.*

class MetricsSuite extends CatsEffectSuite:

  test("metrics: a snapshot at start, one per interval, a last one at the end, with exact counts") {
    val run = Pipeline(Stream.range(0, 10).covary[IO])
      .process(_ => IO.sleep(1.second))
      .withLimit(Limit.fixed(2))
      .withBuffer(4)
      .start
      // sampled half-way between completions, so no sample races with a task ending at the same instant
      .use(r => IO.sleep(500.millis) *> r.metrics(1.second).compile.toVector)
    TestControl.executeEmbed(run).map { snaps =>
      val sampled = snaps.init
      assertEquals(sampled.map(_.elapsed), (0 to 4).map(i => 500.millis + i.seconds).toVector)
      assertEquals(sampled.map(_.succeeded), Vector(0L, 2L, 4L, 6L, 8L), sampled.toString)
      assertEquals(sampled.map(_.started), Vector(2L, 4L, 6L, 8L, 10L), sampled.toString)
      val last = snaps.last
      assertEquals(last.succeeded, 10L)
      assertEquals(last.inFlight, 0L)
      assertEquals(last.buffered, 0L)
      assertEquals(last.finished, 10L)
      assertEquals(last.limit, 2)
      assert(sampled.forall(s => s.inFlight == 2L && s.workers == 2), sampled.toString)
    }
  }

  test("a metrics interval that is not positive fails the stream, naming it; asking for it throws nothing") {
    Pipeline(Stream.range(0, 3).covary[IO]).process(IO.pure).start.use { running =>
      val zero = running.metrics(Duration.Zero)
      zero.compile.drain.intercept[IllegalArgumentException].map(e =>
        assertEquals(e.getMessage, "metrics interval must be > 0, was: 0 days")
      )
    }
  }

  test("snapshot tracks received, buffered and in-flight while producers are held back by the buffer") {
    val run = Pipeline(Stream.range(0, 100).covary[IO])
      .process(_ => IO.never[Unit])
      .withLimit(Limit.fixed(3))
      .withBuffer(5)
      .start
      .use(r => IO.sleep(1.second) *> r.snapshot)
    TestControl.executeEmbed(run).map { s =>
      assertEquals(s.inFlight, 3L)
      assertEquals(s.started, 3L)
      assertEquals(s.workers, 3)
      // Stream.range emits one task at a time: 3 running, 1 held by the producer, and the buffer full (5) if
      // the workers took theirs before it first filled, else 4: a waiting producer is woken only once half
      // the buffer (two places) is free, so it refilled two of the three places the workers freed
      assert(s.buffered == 4L || s.buffered == 5L, s)
      assertEquals(s.received, 3L + s.buffered + 1L)
    }
  }

  test("snapshot: failed tasks by disposition, and the attempts that waited for a rate-limit permit") {
    // tasks 3 and 7 fail both their attempts; the sink takes 3 and fails on 7. Twelve attempts ask for a
    // permit (one each, and the two retries): the burst of two is granted at once, and since every task
    // is instant, the other ten find the bucket empty and wait
    val run = RateLimiter.tokenBucket[IO](1.0, burst = 2).flatMap { limiter =>
      Pipeline(Stream.range(0, 10).covary[IO])
        .process(i => if i == 3 || i == 7 then IO.raiseError(new RuntimeException(s"task $i")) else IO.unit)
        .withLimit(Limit.fixed(4))
        .withRateLimit(limiter)
        .withRetry(Retry.exponential(Duration.Zero, maxAttempts = 2, jitter = Retry.Jitter.Off))
        .withFailurePolicy(FailurePolicy.deadLetter[IO, Int]((i, _) =>
          IO.raiseError(new RuntimeException("sink")).whenA(i == 7)
        ))
        .start
        .use(r => r.join *> r.snapshot)
    }
    TestControl.executeEmbed(run).map { s =>
      assertEquals(s.failed, 2L)
      assertEquals(
        s.dispositions,
        Map(
          Disposition.Skipped -> 0L,
          Disposition.DeadLettered -> 1L,
          Disposition.DeadLetterFailed -> 1L,
          Disposition.Aborted -> 0L,
          Disposition.Interrupted -> 0L
        )
      )
      assertEquals(s.retries, 2L)
      assertEquals(s.rateLimited, 10L)
    }
  }

  test(
    "latencies: the live histogram grows as tasks finish and ends holding every task, as the summary does"
  ) {
    // task i sleeps i ms, ten at a time: in virtual time each latency is exactly i ms. Tasks 1 to 10 end at
    // 1 to 10 ms, and task 10 + k, started when task k ends, at 2k + 10 ms: by 31 ms (no task ends then)
    // tasks 1 to 20 have ended, the last at 30 ms
    val run = Pipeline(Stream.range(1, 101).covary[IO])
      .process(i => IO.sleep(i.millis))
      .withLimit(Limit.fixed(10))
      .start
      .use(r => (IO.sleep(31.millis) *> r.latencies, r.join, r.latencies).tupled)
    TestControl.executeEmbed(run).map { (during, summary, after) =>
      assertEquals((during.count, during.sum, during.max), (20L, (1 to 20).sum.millis, 20.millis))
      assertEquals(after.count, 100L)
      assertEquals(after.sum, (1 to 100).sum.millis)
      assertEquals(after.max, 100.millis)
      assertEquals(after.latency, summary.latency)
      assertEquals(after.bucketCounts(Vector(10.millis, 50.millis)), Vector(10L, 40L, 50L))
      intercept[IllegalArgumentException](after.bucketCounts(Vector(50.millis, 10.millis)))
    }
  }

  test("wake-ups: a task at a time to an idle worker wakes it once per task; a backlog wakes no worker") {
    // one worker; a task every second: after each task it finds nothing, parks, and the next task (or, after
    // the last, the end of the source) wakes it
    val trickle = Pipeline(Stream.range(0, 5).covary[IO].metered(1.second))
      .process(_ => IO.unit)
      .withLimit(Limit.fixed(1))
      .start
      .use(r => r.join *> r.snapshot)
    // four workers, every task buffered before any ends: the buffer is never empty until the source has
    // ended and closed it, and a take from a closed, empty buffer ends the worker without parking
    val backlog = Pipeline(Stream.emits(0 until 1000).covary[IO])
      .process(_ => IO.sleep(1.second))
      .withLimit(Limit.fixed(4))
      .withBuffer(1000)
      .start
      .use(r => r.join *> r.snapshot)
    (TestControl.executeEmbed(trickle), TestControl.executeEmbed(backlog)).tupled.map { (t, b) =>
      assertEquals((t.succeeded, t.wakeUps), (5L, 5L), t)
      assertEquals((b.succeeded, b.wakeUps), (1000L, 0L), b)
    }
  }
