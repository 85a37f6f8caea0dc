package weir

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import fs2.Stream
import munit.CatsEffectSuite

import scala.concurrent.duration.*

/** Per-task timeouts and retries with backoff, with exact expectations in virtual time. */
class RetrySuite extends CatsEffectSuite:

  /** A handler that fails its first `failures(i)` attempts at task `i`, each after 1 s, then succeeds. */
  private def flaky(failures: Map[Int, Int], attempts: Ref[IO, Map[Int, Int]]) = (i: Int) =>
    attempts.modify(m => (m.updated(i, m.getOrElse(i, 0) + 1), m.getOrElse(i, 0) + 1)).flatMap { n =>
      IO.sleep(1.second) *>
        (if n <= failures.getOrElse(i, 0) then IO.raiseError(new RuntimeException(s"attempt $n of $i"))
         else IO.pure(n))
    }

  test("exponential backoff without jitter: retries at exactly base, 2×base, 4×base, in the same slot") {
    val run =
      for
        attempts <- Ref.of[IO, Map[Int, Int]](Map.empty)
        outcomes <- Pipeline(Stream.emit(0).covary[IO])
          .process(flaky(Map(0 -> 3), attempts))
          .withRetry(Retry.exponential(100.millis, maxAttempts = 5, jitter = Retry.Jitter.Off))
          .outcomes
          .evalMap(o => IO.monotonic.map(t => (o, t)))
          .compile
          .toVector
      yield outcomes
    TestControl.executeEmbed(run).map { outcomes =>
      // 4 attempts of 1 s each, with 100 + 200 + 400 ms of backoff between them
      assertEquals(outcomes.map(_._2), Vector(4.seconds + 700.millis))
      outcomes.head._1 match
        case TaskOutcome.Succeeded(0, 4, 4) => ()
        case other => fail(s"expected success at the 4th attempt, got $other")
    }
  }

  test("exhausted attempts go to the failure policy with the last error and the attempt count") {
    val run =
      for
        attempts <- Ref.of[IO, Map[Int, Int]](Map.empty)
        dead <- Ref.of[IO, List[String]](Nil)
        summary <- Pipeline(Stream.range(0, 3).covary[IO])
          .process(flaky(Map(1 -> 10), attempts))
          .withRetry(Retry.exponential(1.second, maxAttempts = 3, jitter = Retry.Jitter.Off))
          .withFailurePolicy(FailurePolicy.deadLetter((_, e) => dead.update(e.getMessage :: _)))
          .run
        letters <- dead.get
      yield (summary, letters)
    TestControl.executeEmbed(run).map { (s, letters) =>
      assertEquals(s.succeeded, 2L)
      assertEquals(s.retries, 2L)
      assertEquals(letters, List("attempt 3 of 1"))
      assertEquals(
        s.failures.map(f => (f.task, f.attempts, f.disposition)),
        Vector((1, 3, Disposition.DeadLettered))
      )
      assertEquals(s.elapsed, 3.seconds + 1.second + 2.seconds) // 3 attempts + backoffs of 1 s and 2 s
    }
  }

  test("a non-retryable error is not retried") {
    val run =
      for
        attempts <- Ref.of[IO, Map[Int, Int]](Map.empty)
        s <- Pipeline(Stream.emit(7).covary[IO])
          .process(flaky(Map(7 -> 5), attempts))
          .withRetry(Retry.exponential(
            1.second,
            maxAttempts = 5
          ).retryOn(_.isInstanceOf[java.io.IOException]))
          .run
      yield s
    TestControl.executeEmbed(run).map { s =>
      assertEquals(s.retries, 0L)
      assertEquals(s.failures.map(_.attempts), Vector(1))
      assertEquals(s.elapsed, 1.second)
    }
  }

  test("a task timeout fails the attempt with TaskTimedOut, counts it, and is retried like any failure") {
    val run =
      for
        calls <- Ref.of[IO, Int](0)
        s <- Pipeline(Stream.emit(1).covary[IO])
          .process(_ =>
            calls.updateAndGet(_ + 1).flatMap(n => IO.sleep(if n < 3 then 10.seconds else 1.second))
          )
          .withTaskTimeout(2.seconds)
          .withRetry(Retry.exponential(500.millis, maxAttempts = 3, factor = 1.0, jitter = Retry.Jitter.Off))
          .run
      yield s
    TestControl.executeEmbed(run).map { s =>
      assertEquals(s.succeeded, 1L)
      assertEquals(s.timeouts, 2L)
      assertEquals(s.retries, 2L)
      assertEquals(s.elapsed, 2.seconds + 500.millis + 2.seconds + 500.millis + 1.second)
    }
  }

  test("timeouts without retries: the outcome carries TaskTimedOut naming the limit") {
    val run = Pipeline(Stream.emit(1).covary[IO]).process(_ => IO.never[Unit]).withTaskTimeout(3.seconds).run
    TestControl.executeEmbed(run).map { s =>
      assertEquals(s.failures.map(_.error.getMessage), Vector("task attempt timed out after 3 seconds"))
      assert(s.failures.head.error.isInstanceOf[TaskTimedOut])
      assertEquals(s.elapsed, 3.seconds)
    }
  }

  test("full jitter waits somewhere in [0, delay]") {
    val run =
      for
        attempts <- Ref.of[IO, Map[Int, Int]](Map.empty)
        s <- Pipeline(Stream.range(0, 20).covary[IO])
          .process(flaky((0 until 20).map(_ -> 1).toMap, attempts))
          .withLimit(Limit.fixed(20))
          .withRetry(Retry.exponential(1.second, maxAttempts = 2))
          .run
      yield s
    TestControl.executeEmbed(run).map { s =>
      assertEquals(s.succeeded, 20L)
      assert(s.elapsed >= 2.seconds && s.elapsed <= 3.seconds, s.elapsed.toString)
    }
  }

  test("a drain interrupts a task waiting for its retry, which keeps its attempt count") {
    val run =
      for
        attempts <- Ref.of[IO, Map[Int, Int]](Map.empty)
        s <- Pipeline(Stream.emit(0).covary[IO])
          .process(flaky(Map(0 -> 5), attempts))
          .withRetry(Retry.exponential(10.seconds, maxAttempts = 5, jitter = Retry.Jitter.Off))
          .start
          .use(r => IO.sleep(3.seconds) *> r.drain(1.second))
      yield s
    TestControl.executeEmbed(run).map { s =>
      assertEquals(s.failures.map(f => (f.disposition, f.attempts)), Vector((Disposition.Interrupted, 1)))
      assertEquals(s.elapsed, 4.seconds)
    }
  }

  test("bad retry and timeout settings throw nothing; the run fails naming each value") {
    assertEquals(Retry.exponential(1.second, 0).errors, List("maxAttempts must be >= 1, was: 0"))
    assertEquals(
      Retry.exponential(-1.second, 2).errors.head,
      "retry base delay must be >= 0, was: -1 seconds"
    )
    assertEquals(
      Retry.exponential(1.second, 2, factor = Double.NaN).errors,
      List("retry factor must be finite and >= 1, was: NaN")
    )
    assertEquals(
      Retry.exponential(2.seconds, 2, maxDelay = 1.second).errors,
      List("maxDelay must be >= base (2 seconds), was: 1 second")
    )
    Pipeline(Stream.emit(1).covary[IO])
      .process(IO.pure)
      .withTaskTimeout(0.seconds)
      .withRetry(Retry.exponential(1.second, 0))
      .run
      .intercept[InvalidSettings]
      .map(e =>
        assertEquals(
          e.getMessage,
          "invalid Pipeline: retry: maxAttempts must be >= 1, was: 0; task timeout must be > 0, was: 0 seconds"
        )
      )
  }
