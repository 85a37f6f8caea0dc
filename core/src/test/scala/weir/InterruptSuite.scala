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
 * Tasks told to stop while they run ([[Interruptible]]): the handler is cancelled and its finalizers run
 * before the outcome, which is `Failed(TaskInterrupted(reason), Interrupted)`, never retried and never
 * handed to the failure policy; a request before the start is a refusal; a request during a retry's wait
 * ends the task then.
 */
class InterruptSuite extends CatsEffectSuite with ScalaCheckSuite:

  /** A task holding an [[Interruption]], counting the engine's registrations and unregistrations. */
  final class Task(val id: Int, val key: String = "") extends Interruptible:
    val interruption = new Interruption
    val registered = new AtomicInteger
    val unregistered = new AtomicInteger
    def tryStart(): Option[String] = interruption.requested
    def onInterrupt(interrupt: String => Unit): () => Unit =
      registered.incrementAndGet()
      val off = interruption.onInterrupt(interrupt)
      () =>
        unregistered.incrementAndGet()
        off()

  private def source(tasks: List[Task]) = Source.refusable(Stream.emits(tasks).covary[IO])

  /**
   * `tasks` through the pipeline `use` makes of them, the first running until it is interrupted at 1 s, the
   * others for 1 s each: what `use` returns, and when each task started.
   */
  private def firstInterrupted[R](tasks: List[Task])(use: Pipeline[IO, Task, Unit] => IO[R]) =
    for
      starts <- Ref[IO].of(Map.empty[Int, FiniteDuration])
      _ <- (IO.sleep(1.second) *> IO(tasks.head.interruption.request("stop"))).start
      result <- use(Pipeline(source(tasks)).process(t =>
        IO.monotonic.flatMap(now => starts.update(_.updated(t.id, now))) *>
          (if t.id == tasks.head.id then IO.never else IO.sleep(1.second))
      ))
      started <- starts.get
    yield (result, started)

  test("a running task told to stop is cancelled, its finalizer runs first, and the run goes on") {
    val tasks = List.tabulate(4)(new Task(_))
    val run =
      for
        events <- Ref[IO].of(Vector.empty[String])
        // task 1 is told to stop 5 s into its 10 s handler
        _ <- (IO.sleep(5.seconds) *> IO(tasks(1).interruption.request("an operator cancelled it"))).start
        outcomes <- Pipeline(source(tasks))
          .process(t =>
            IO.sleep(10.seconds).onCancel(events.update(_ :+ s"finalizer ${t.id}")) *> IO.pure(t.id)
          )
          .withLimit(Limit.fixed(4))
          .withFailurePolicy(FailurePolicy.failFast)
          .outcomes
          .evalTap(o => events.update(_ :+ s"outcome ${o.task.id}"))
          .compile
          .toVector
        seen <- events.get
        now <- IO.monotonic
      yield (outcomes, seen, now)
    TestControl.executeEmbed(run).map { (outcomes, seen, now) =>
      val interrupted = outcomes.collect {
        case TaskOutcome.Failed(t, e: TaskInterrupted, Disposition.Interrupted, attempts) =>
          (t.id, e.reason, attempts)
      }
      assertEquals(interrupted, Vector((1, "an operator cancelled it", 1)))
      assertEquals(seen.take(2), Vector("finalizer 1", "outcome 1"))
      // fail-fast did not stop the others: they ran their 10 s
      assertEquals(outcomes.collect { case TaskOutcome.Succeeded(t, _, _) => t.id }.sorted, Vector(0, 2, 3))
      assertEquals(now, 10.seconds)
      // an interrupted attempt has nothing to unregister
      assertEquals(
        tasks.map(t => (t.registered.get, t.unregistered.get)),
        List((1, 1), (1, 0), (1, 1), (1, 1))
      )
    }
  }

  test("an interrupted task is not retried, whatever the retry allows") {
    val task = new Task(0)
    val run =
      for
        calls <- Ref[IO].of(0)
        _ <- (IO.sleep(1.second) *> IO(task.interruption.request("stop"))).start
        summary <- Pipeline(source(List(task)))
          .process(_ => calls.update(_ + 1) *> IO.never[Unit])
          .withRetry(Retry.exponential(10.millis, maxAttempts = 5))
          .run
        n <- calls.get
      yield (summary, n)
    TestControl.executeEmbed(run).map { (summary, calls) =>
      assertEquals((calls, summary.failed, summary.retries), (1, 1L, 0L))
      assertEquals(
        summary.failures.map(f => (f.disposition, f.attempts)),
        Vector((Disposition.Interrupted, 1))
      )
    }
  }

  test("a task told to stop in an attempt that fails right after ends interrupted, not retried") {
    val task = new Task(0)
    val run =
      for
        calls <- Ref[IO].of(0)
        summary <- Pipeline(source(List(task)))
          .process(_ =>
            // the stop comes 1 s into the first attempt, which then fails: the interruption wins
            calls.update(_ + 1) *> IO.sleep(1.second) *>
              IO(task.interruption.request("stopped between attempts")) *>
              IO.raiseError[Unit](new Exception("boom"))
          )
          .withRetry(Retry.exponential(10.seconds, maxAttempts = 3, jitter = Retry.Jitter.Off))
          .run
        n <- calls.get
      yield (summary, n)
    TestControl.executeEmbed(run).map { (summary, calls) =>
      assertEquals(calls, 1)
      val failure = summary.failures.head
      assertEquals(failure.disposition, Disposition.Interrupted)
      assertEquals(failure.error.asInstanceOf[TaskInterrupted].reason, "stopped between attempts")
    }
  }

  test("a task told to stop while it waits for a retry ends then, and its worker goes on at once") {
    // one worker: task 0's first attempt fails at 1 s, its 10 s backoff is cut by the stop at 4 s
    val tasks = List.tabulate(2)(new Task(_))
    val run =
      for
        starts <- Ref[IO].of(Vector.empty[(Int, FiniteDuration)])
        _ <- (IO.sleep(4.seconds) *> IO(tasks(0).interruption.request("stopped in its backoff"))).start
        summary <- Pipeline(source(tasks))
          .process(t =>
            IO.monotonic.flatMap(now => starts.update(_ :+ (t.id -> now))) *> IO.sleep(1.second) *>
              IO.raiseError[Unit](new Exception("boom")).whenA(t.id == 0)
          )
          .withLimit(Limit.fixed(1))
          .withRetry(Retry.exponential(10.seconds, maxAttempts = 3, jitter = Retry.Jitter.Off))
          .run
        started <- starts.get
        end <- IO.monotonic
      yield (summary, started, end)
    TestControl.executeEmbed(run).map { (summary, started, end) =>
      assertEquals(started, Vector(0 -> Duration.Zero, 1 -> 4.seconds))
      assertEquals(end, 5.seconds)
      assertEquals((summary.succeeded, summary.failed, summary.retries), (1L, 1L, 0L))
      val failure = summary.failures.head
      assertEquals((failure.disposition, failure.attempts), (Disposition.Interrupted, 1))
      assertEquals(failure.error.asInstanceOf[TaskInterrupted].reason, "stopped in its backoff")
      // the attempt's registration and the wait's; the interrupted wait has nothing to unregister
      assertEquals((tasks(0).registered.get, tasks(0).unregistered.get), (2, 1))
    }
  }

  test("a retry's wait that is not interrupted unregisters, and the next attempt runs after the backoff") {
    val task = new Task(0)
    val run =
      for
        starts <- Ref[IO].of(Vector.empty[FiniteDuration])
        summary <- Pipeline(source(List(task)))
          .process(_ =>
            IO.monotonic.flatMap(now => starts.updateAndGet(_ :+ now)).flatMap(s =>
              IO.sleep(1.second) *> IO.raiseError[Unit](new Exception("boom")).whenA(s.size == 1)
            )
          )
          .withRetry(Retry.exponential(10.seconds, maxAttempts = 3, jitter = Retry.Jitter.Off))
          .run
        started <- starts.get
      yield (summary, started)
    TestControl.executeEmbed(run).map { (summary, started) =>
      assertEquals(started, Vector(Duration.Zero, 11.seconds))
      assertEquals((summary.succeeded, summary.retries), (1L, 1L))
      // two attempts and the wait between them, each unregistered once it ended
      assertEquals((task.registered.get, task.unregistered.get), (3, 3))
    }
  }

  test("a task told to stop before it starts is refused, and never registers") {
    val tasks = List.tabulate(3)(new Task(_))
    assert(tasks(2).interruption.request("cancelled before it ran"))
    Pipeline(source(tasks)).process(t => IO.pure(t.id)).outcomes.compile.toVector.map { outcomes =>
      assertEquals(
        outcomes.collect { case TaskOutcome.NotStarted(t, NotStartedReason.Refused(why)) => (t.id, why) },
        Vector(2 -> "cancelled before it ran")
      )
      // a task that ran registered at most once (a handler that ends before the race's other side starts
      // leaves it unregistered), and took back what it registered; the refused one never registered
      assert(
        tasks.take(2).forall(t => t.registered.get <= 1 && t.unregistered.get == t.registered.get),
        tasks
      )
      assertEquals(tasks(2).registered.get, 0)
    }
  }

  test(
    "a first attempt asked its refusal once, just before it started: a refusal that comes after is not asked"
  ) {
    // answers None the first time it is asked, then refuses: asked again at the attempt, it would fail an
    // attempt that never ran
    final class Flipping extends Interruptible:
      val asked = new AtomicInteger
      def tryStart(): Option[String] = Option.when(asked.getAndIncrement() > 0)("too late")
      def onInterrupt(interrupt: String => Unit): () => Unit = () => ()
    val task = new Flipping
    Pipeline(Source.refusable(Stream.emit(task).covary[IO])).process(_ => IO.pure(1)).run.map { s =>
      assertEquals((s.succeeded, s.failed, s.refused, task.asked.get), (1L, 0L, 0L, 1))
    }
  }

  test("tasks of a source that is not refusable are never registered nor interrupted") {
    val tasks = List.tabulate(3)(new Task(_))
    tasks.foreach(_.interruption.request("ignored"))
    Pipeline(Source(Stream.emits(tasks).covary[IO])).process(t => IO.pure(t.id)).run.map { s =>
      assertEquals((s.succeeded, s.failed), (3L, 0L))
      assertEquals(tasks.map(_.registered.get), List(0, 0, 0))
    }
  }

  test("an interruption hands the task's key on: the key's next task runs") {
    val tasks = List(new Task(0, "a"), new Task(1, "a"), new Task(2, "b"))
    val run = firstInterrupted(tasks)(
      _.withLimit(Limit.fixed(2)).withOrder(TaskOrder.byKey(_.key)).run
    )
    TestControl.executeEmbed(run).map { (summary, started) =>
      // a's second task starts when its first is interrupted, at 1 s; b's ran beside them from the start
      assertEquals(started, Map(0 -> Duration.Zero, 2 -> Duration.Zero, 1 -> 1.second))
      assertEquals((summary.succeeded, summary.failed), (2L, 1L))
    }
  }

  test("an interrupted task's worker is replaced: the pool keeps its size and the next tasks run on time") {
    // one worker: the task interrupted at 1 s cancels it; its replacement runs the other two, one after another
    val tasks = List.tabulate(3)(new Task(_))
    val run = firstInterrupted(tasks)(
      _.withLimit(Limit.fixed(1)).start.use(running =>
        IO.sleep(1500.millis) *> running.snapshot.product(running.join)
      )
    )
    TestControl.executeEmbed(run).map { case ((during, summary), started) =>
      assertEquals(started, Map(0 -> Duration.Zero, 1 -> 1.second, 2 -> 2.seconds))
      assertEquals((during.workers, during.limit), (1, 1))
      assertEquals((summary.succeeded, summary.failed), (2L, 1L))
      assertEquals(tasks.map(t => (t.registered.get, t.unregistered.get)), List((1, 0), (1, 1), (1, 1)))
    }
  }

  test("a run released while interruptible tasks run cancels their handlers and unregisters each once") {
    val tasks = List.tabulate(3)(new Task(_))
    val run =
      for
        started <- cats.effect.Deferred[IO, Unit]
        running <- Ref[IO].of(0)
        finalized <- Ref[IO].of(Set.empty[Int])
        summary <- Pipeline(source(tasks))
          .process(t =>
            (running.updateAndGet(_ + 1).flatMap(n =>
              (if n == 3 then started.complete(()).void else IO.unit)
            ) *> IO.never[Unit])
              .onCancel(finalized.update(_ + t.id))
          )
          .withLimit(Limit.fixed(3))
          .withReleaseGrace(Duration.Zero)
          .start
          // released once every handler runs
          .use(handle => started.get.as(handle))
          .flatMap(_.join)
        cancelled <- finalized.get
      yield (summary, cancelled)
    TestControl.executeEmbed(run).map { (summary, cancelled) =>
      assertEquals(cancelled, Set(0, 1, 2))
      assertEquals((summary.succeeded, summary.failed), (0L, 3L))
      // a wait cancelled by the run, not by the task's interruption: each registration is undone
      assertEquals(tasks.map(t => (t.registered.get, t.unregistered.get)), List((1, 1), (1, 1), (1, 1)))
    }
  }

  property("each task ends once: interrupted exactly when its stop comes before its end") {
    // handlers take an even number of ms, stops come at odd ones: no tie to decide
    Prop.forAllNoShrink(
      Gen.choose(1, 30).flatMap(n =>
        Gen.listOfN(n, Gen.zip(Gen.choose(1, 50).map(_ * 2), Gen.option(Gen.choose(0, 60).map(_ * 2 + 1))))
      ),
      Gen.choose(1, 8)
    ) { (plan, limit) =>
      val tasks = plan.indices.toList.map(new Task(_))
      val run =
        for
          // each stop is timed from the task's own start, so that the answer does not depend on the limit
          outcomes <- Pipeline(source(tasks))
            .process { t =>
              val (takes, stopAt) = plan(t.id)
              val stop = stopAt.fold(IO.unit)(at =>
                (IO.sleep(at.millis) *> IO(t.interruption.request(s"stop ${t.id}"))).start.void
              )
              stop *> IO.sleep(takes.millis).as(t.id)
            }
            .withLimit(Limit.fixed(limit))
            .outcomes
            .compile
            .toVector
        yield outcomes
      import cats.effect.unsafe.implicits.global
      TestControl.executeEmbed(run).map { outcomes =>
        assertEquals(outcomes.map(_.task.id).sorted, tasks.map(_.id).toVector)
        val interrupted = outcomes.collect {
          case TaskOutcome.Failed(t, e: TaskInterrupted, Disposition.Interrupted, 1) =>
            assertEquals(e.reason, s"stop ${t.id}")
            t.id
        }.sorted
        val expected = plan.zipWithIndex.collect { case ((takes, Some(at)), i) if at < takes => i }.toVector
        assertEquals(interrupted, expected)
        assertEquals(outcomes.count(_.isInstanceOf[TaskOutcome.Succeeded[?, ?]]), plan.size - expected.size)
        assertEquals(
          tasks.map(t => (t.registered.get, t.unregistered.get)),
          tasks.map(t => (1, if expected.contains(t.id) then 0 else 1))
        )
      }.unsafeRunSync()
      true
    }
  }
