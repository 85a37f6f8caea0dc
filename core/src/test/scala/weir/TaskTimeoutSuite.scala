package weir

import cats.effect.{IO, Ref}
import cats.syntax.all.*
import cats.effect.testkit.TestControl
import fs2.Stream
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}

import java.util.concurrent.atomic.AtomicInteger
import scala.concurrent.duration.*

/**
 * The task timeout, kept by one deadline per worker and its standby rather than a race per attempt: each
 * attempt's deadline counts from its own start, an attempt that overruns is cancelled at its deadline (its
 * finalizers first) and fails with [[TaskTimedOut]], counted and retried on the same task, and a stop, a
 * drain's deadline or an interruption that meets an armed deadline records the task once. In virtual time.
 */
class TaskTimeoutSuite extends CatsEffectSuite with ScalaCheckSuite:

  private val noJitter =
    Retry.exponential(500.millis, maxAttempts = 2, factor = 1.0, jitter = Retry.Jitter.Off)

  /** The outcomes of `pipeline`, each with the virtual time at which it was read. */
  private def timed[A, B](pipeline: Pipeline[IO, A, B]): IO[Vector[(TaskOutcome[A, B], FiniteDuration)]] =
    pipeline.outcomes.evalMap(o => IO.monotonic.map(t => (o, t))).compile.toVector

  private def timedOut(e: Throwable, limit: FiniteDuration): Boolean =
    e match
      case t: TaskTimedOut => t.timeout == limit
      case _ => false

  test("an attempt that ends just before its deadline succeeds; one that does not is cancelled at it") {
    val run = timed(
      Pipeline(Stream(0, 1).covary[IO])
        .process(i => if i == 0 then IO.sleep(1999.millis).as(i) else IO.never)
        .withLimit(Limit.fixed(2))
        .withTaskTimeout(2.seconds)
    )
    TestControl.executeEmbed(run).map { outcomes =>
      val seen = outcomes.map {
        case (TaskOutcome.Succeeded(i, _, 1), at) => (i, "succeeded", at)
        case (TaskOutcome.Failed(i, e, Disposition.Skipped, 1), at) if timedOut(e, 2.seconds) =>
          (i, "timed out", at)
        case (other, at) => fail(s"unexpected $other at $at")
      }
      assertEquals(seen, Vector((0, "succeeded", 1999.millis), (1, "timed out", 2.seconds)))
    }
  }

  test("an attempt that overruns is cancelled, finalizers first, and its retry on the same task succeeds") {
    val run =
      for
        events <- Ref[IO].of(Vector.empty[(String, FiniteDuration)])
        note = (what: String) => IO.monotonic.flatMap(t => events.update(_ :+ (what, t)))
        calls <- Ref[IO].of(Map.empty[String, Int])
        outcomes <- timed(
          Pipeline(Stream("a1", "a2").covary[IO])
            .process { task =>
              calls.modify(m =>
                (m.updated(task, m.getOrElse(task, 0) + 1), m.getOrElse(task, 0) + 1)
              ).flatMap {
                n =>
                  note(s"start $task #$n") *>
                    (if task == "a1" && n == 1 then IO.never.onCancel(note(s"cancelled $task #$n"))
                     else IO.sleep(1.second)).as(n)
              }
            }
            .withLimit(Limit.fixed(2))
            .withOrder(TaskOrder.byKey(_.take(1))) // one key: a2 starts once a1 has ended, retry included
            .withTaskTimeout(2.seconds)
            .withRetry(noJitter)
        )
        seen <- events.get
      yield (outcomes, seen)
    TestControl.executeEmbed(run).map { (outcomes, seen) =>
      assertEquals(
        seen,
        Vector(
          ("start a1 #1", Duration.Zero),
          ("cancelled a1 #1", 2.seconds),
          ("start a1 #2", 2500.millis),
          ("start a2 #1", 3500.millis)
        )
      )
      assertEquals(
        outcomes.map((o, at) => (o, at)),
        Vector(
          (TaskOutcome.Succeeded("a1", 2, 2), 3500.millis),
          (TaskOutcome.Succeeded("a2", 1, 1), 4500.millis)
        )
      )
    }
  }

  test("the deadline is re-armed for each attempt, counted from that attempt's start") {
    // one worker: each task's deadline counts from its own start, not from the standby's last wake-up
    val takes = Vector(1500.millis, 1500.millis, 3.seconds, Duration.Zero)
    val run = timed(
      Pipeline(Stream.range(0, takes.size).covary[IO])
        .process(i => IO.sleep(takes(i)).as(i))
        .withLimit(Limit.fixed(1))
        .withTaskTimeout(2.seconds)
    )
    TestControl.executeEmbed(run).map { outcomes =>
      val seen = outcomes.map {
        case (TaskOutcome.Succeeded(i, _, _), at) => (i, true, at)
        case (TaskOutcome.Failed(i, e, _, _), at) if timedOut(e, 2.seconds) => (i, false, at)
        case (other, at) => fail(s"unexpected $other at $at")
      }
      assertEquals(
        seen,
        Vector((0, true, 1500.millis), (1, true, 3.seconds), (2, false, 5.seconds), (3, true, 5.seconds))
      )
    }
  }

  test(
    "releasing a run while a deadline is armed interrupts the attempt, counts no timeout, leaves no timer"
  ) {
    val run =
      Pipeline(Stream(0).covary[IO])
        .process(_ => IO.sleep(10.seconds))
        .withTaskTimeout(5.seconds)
        .start
        .use(running => IO.sleep(1.second) *> running.snapshot)
        .product(IO.monotonic)
    TestControl.execute(run).flatMap { control =>
      control.tick *> control.advanceAndTick(1.second) *> control.results.map {
        case Some(cats.effect.Outcome.Succeeded((snapshot, at))) =>
          assertEquals((snapshot.inFlight, snapshot.timeouts, at), (1L, 0L, 1.second))
        case other => fail(s"the run did not end at 1 s: $other")
      } *> control.nextInterval.map(next => assertEquals(next, Duration.Zero)) // no standby sleeps on
    }
  }

  test(
    "a drain whose deadline is now, while a deadline is armed, records the task interrupted, not timed out"
  ) {
    val run =
      Pipeline(Stream(0).covary[IO])
        .process(_ => IO.sleep(10.seconds))
        .withTaskTimeout(5.seconds)
        .start
        .use(running => IO.sleep(1.second) *> running.drain(Duration.Zero))
    TestControl.executeEmbed(run).map { s =>
      assertEquals((s.failed, s.timeouts, s.elapsed), (1L, 0L, 1.second))
      assertEquals(s.failures.map(_.disposition), Vector(Disposition.Interrupted))
    }
  }

  test("a timeout that fires while the run drains is recorded TaskTimedOut, and the drain then completes") {
    val run =
      Pipeline(Stream(0, 1).covary[IO])
        .process(i => if i == 0 then IO.never else IO.sleep(1.second))
        .withLimit(Limit.fixed(2))
        .withTaskTimeout(3.seconds)
        .start
        .use(running => IO.sleep(500.millis) *> running.drain(10.seconds))
    TestControl.executeEmbed(run).map { s =>
      assertEquals(
        (s.stop, s.succeeded, s.failed, s.timeouts, s.elapsed),
        (StopReason.Drained, 1L, 1L, 1L, 3.seconds)
      )
      assert(timedOut(s.failures.head.error, 3.seconds), s.failures.toString)
    }
  }

  test("a drain's deadline kills a task waiting to retry its timed-out attempt: recorded interrupted, once") {
    // times out at 1 s, then waits 10 s for its retry; the drain's deadline passes at 3.5 s
    val run =
      Pipeline(Stream(0).covary[IO])
        .process(_ => IO.never[Unit])
        .withTaskTimeout(1.second)
        .withRetry(Retry.exponential(10.seconds, maxAttempts = 2, factor = 1.0, jitter = Retry.Jitter.Off))
        .start
        .use(running => IO.sleep(500.millis) *> running.drain(3.seconds))
    TestControl.executeEmbed(run).map { s =>
      assertEquals((s.received, s.failed, s.timeouts, s.retries, s.elapsed), (1L, 1L, 1L, 0L, 3500.millis))
      assertEquals(s.failures.map(f => (f.disposition, f.attempts)), Vector((Disposition.Interrupted, 1)))
    }
  }

  /** A task that can be interrupted ([[Interruptible]]), counting its registrations. */
  final class Task(val id: Int) extends Interruptible:
    val interruption = new Interruption
    val registered = new AtomicInteger
    def tryStart(): Option[String] = interruption.requested
    def onInterrupt(interrupt: String => Unit): () => Unit =
      registered.incrementAndGet()
      interruption.onInterrupt(interrupt)

  test("an interruption before the deadline wins: not retried; the worker in its place keeps deadlines") {
    val tasks = List.tabulate(2)(new Task(_))
    val run =
      for
        _ <- (IO.sleep(1.second) *> IO(tasks.head.interruption.request("stop"))).start
        outcomes <- timed(
          Pipeline(Source.refusable(Stream.emits(tasks).covary[IO]))
            .process(_ => IO.never[Unit])
            .withLimit(Limit.fixed(1))
            .withTaskTimeout(2.seconds)
            .withRetry(noJitter)
        )
      yield outcomes
    TestControl.executeEmbed(run).map { outcomes =>
      val seen = outcomes.map {
        case (TaskOutcome.Failed(t, e: TaskInterrupted, Disposition.Interrupted, n), at) =>
          (t.id, e.reason, n, at)
        case (TaskOutcome.Failed(t, e, _, n), at) if timedOut(e, 2.seconds) => (t.id, "timed out", n, at)
        case (other, at) => fail(s"unexpected $other at $at")
      }
      // task 1 starts at 1 s on the replacement: two attempts of 2 s with 0.5 s between
      assertEquals(seen, Vector((0, "stop", 1, 1.second), (1, "timed out", 2, 5500.millis)))
      assertEquals(tasks.map(_.registered.get), List(1, 3)) // task 1: two attempts and the wait between
    }
  }

  test("an interruption at the very instant of the deadline: one outcome, interrupted, never run again") {
    // which of the two wins is the scheduler's choice, which TestControl draws at random on each run: the
    // interruption (its attempt recorded interrupted); the deadline, then the interruption during the
    // retry's wait (ended then, the timeout counted); or the deadline, then the interruption before the
    // wait registered (the retry refused, recorded as attempt 2). Never a second run of the handler.
    def once =
      val task = new Task(0)
      val run =
        for
          calls <- Ref[IO].of(0)
          _ <- (IO.sleep(2.seconds) *> IO(task.interruption.request("stop"))).start
          s <- Pipeline(Source.refusable(Stream.emit(task).covary[IO]))
            .process(_ => calls.update(_ + 1) *> IO.never[Unit])
            .withTaskTimeout(2.seconds)
            .withRetry(noJitter)
            .run
          n <- calls.get
        yield (s, n)
      TestControl.executeEmbed(run).map { (s, calls) =>
        val attempts = s.failures.map(f => (f.error, f.disposition, f.attempts)) match
          case Vector((e: TaskInterrupted, Disposition.Interrupted, n)) if e.reason == "stop" => n
          case other => fail(s"expected one interrupted task, got $other")
        assertEquals((s.failed, s.elapsed, calls), (1L, 2.seconds, 1))
        val counts = (s.timeouts, s.retries, attempts)
        assert(Set((0L, 0L, 1), (1L, 0L, 1), (1L, 1L, 2)).contains(counts), counts.toString)
        counts
      }
    List.fill(30)(once).sequence.void
  }

  property("with interruptions: a task stopped before its deadline is interrupted, else it times out") {
    // durations are even ms, stops odd ms, the timeout 40.5 ms: no two of them meet
    val limit = 40500.micros
    Prop.forAllNoShrink(
      Gen.choose(1, 20).flatMap(n =>
        Gen.listOfN(n, Gen.zip(Gen.choose(0, 40).map(_ * 2), Gen.option(Gen.choose(0, 50).map(_ * 2 + 1))))
      ),
      Gen.choose(1, 6)
    ) { (plan, workers) =>
      val tasks = plan.indices.toList.map(new Task(_))
      val run = Pipeline(Source.refusable(Stream.emits(tasks).covary[IO]))
        .process { t =>
          val (takes, stopAt) = plan(t.id)
          // each stop is timed from the task's own start, so that the answer does not depend on the limit
          stopAt.fold(IO.unit)(at =>
            (IO.sleep(at.millis) *> IO(t.interruption.request("stop"))).start.void
          ) *>
            IO.sleep(takes.millis)
        }
        .withLimit(Limit.fixed(workers))
        .withTaskTimeout(limit)
        .outcomes
        .compile
        .toVector
      import cats.effect.unsafe.implicits.global
      TestControl.executeEmbed(run).map { outcomes =>
        val seen = outcomes.map {
          case TaskOutcome.Succeeded(t, _, 1) => (t.id, "succeeded")
          case TaskOutcome.Failed(t, _: TaskInterrupted, Disposition.Interrupted, 1) => (t.id, "interrupted")
          case TaskOutcome.Failed(t, e, Disposition.Skipped, 1) if timedOut(e, limit) => (t.id, "timed out")
          case other => fail(s"unexpected $other")
        }.sorted
        val expected = plan.zipWithIndex.map { case ((takes, stop), i) =>
          val ends = math.min(takes * 1000, limit.toMicros.toInt) // when the attempt ends, in µs
          if stop.exists(_ * 1000 < ends) then (i, "interrupted")
          else if takes.millis < limit then (i, "succeeded")
          else (i, "timed out")
        }.toVector
        assertEquals(seen, expected)
        assert(tasks.forall(_.registered.get == 1))
      }.unsafeRunSync()
      true
    }
  }

  property("each task ends once, as its attempts' durations and the timeout say, whatever the limit") {
    // durations are whole seconds and the timeout 2.5 s: no attempt ends at its deadline
    val limit = 2500.millis
    Prop.forAllNoShrink(
      Gen.choose(1, 12).flatMap(n => Gen.listOfN(n, Gen.listOfN(3, Gen.choose(0, 4)))),
      Gen.choose(1, 3),
      Gen.choose(1, 12)
    ) { (plan, maxAttempts, workers) =>
      val run =
        for
          calls <- Ref[IO].of(Map.empty[Int, Int])
          s <- Pipeline(Stream.range(0, plan.size).covary[IO])
            .process(i =>
              calls.modify(m => (m.updated(i, m.getOrElse(i, 0) + 1), m.getOrElse(i, 0))).flatMap(n =>
                IO.sleep(plan(i)(n).seconds)
              )
            )
            .withLimit(Limit.fixed(workers))
            .withTaskTimeout(limit)
            .withRetry(Retry.exponential(1.second, maxAttempts, factor = 1.0, jitter = Retry.Jitter.Off))
            .run
        yield s
      // per task: the attempts it makes, whether the last succeeds, and how long it holds its worker
      val expected = plan.map { takes =>
        val made = takes.take(maxAttempts)
        val tries = made.indexWhere(_.seconds < limit) + 1 match
          case 0 => maxAttempts
          case n => n
        val ran = made.take(tries)
        val held = ran.map(t => if t.seconds < limit then t.seconds else limit).reduce(_ + _) +
          (tries - 1).seconds
        (tries, ran.last.seconds < limit, held)
      }
      import cats.effect.unsafe.implicits.global
      TestControl.executeEmbed(run).map { s =>
        assertEquals(s.received, plan.size.toLong)
        assertEquals(s.succeeded, expected.count(_._2).toLong)
        assertEquals(s.failed, expected.count(!_._2).toLong)
        assertEquals(s.timeouts, expected.map((tries, ok, _) => if ok then tries - 1 else tries).sum.toLong)
        assertEquals(s.retries, expected.map(_._1 - 1).sum.toLong)
        assert(s.failures.forall(f => timedOut(f.error, limit)), s.failures.toString)
        if workers >= plan.size then assertEquals(s.elapsed, expected.map(_._3).max)
      }.unsafeRunSync()
      true
    }
  }
