package weir

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import cats.effect.unsafe.implicits.global
import cats.syntax.all.*
import fs2.Stream
import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

import scala.concurrent.duration.*

/**
 * The engine's invariants over random workloads, in virtual time: every task received is accounted for
 * exactly once, in-flight work never exceeds the limit, input order holds where promised, and a stopped
 * run leaves nothing running.
 */
class AccountingSuite extends ScalaCheckSuite:

  override def scalaCheckTestParameters = super.scalaCheckTestParameters.withMinSuccessfulTests(150)

  enum Stop:
    case Never
    case Drain(at: Int, deadline: Int)
    case Cancel(at: Int)

  final case class Scenario(
      tasks: Int,
      producers: Int,
      chunk: Int,
      produceDelay: Int,
      durations: Vector[Int],
      failing: Set[Int],
      limit: Int,
      buffer: Int,
      policy: Int, // 0 skip, 1 dead-letter, 2 fail-fast
      window: Option[Int],
      keys: Option[Int], // byKey(i % keys) (instead of the window)
      timeout: Option[Int], // handlers time out after this many ms (plus half a ms, so never a tie)
      attempts: Int, // retries with 5 ms backoff until this many attempts
      stop: Stop,
      sample: Int // failures the summary keeps
  ):
    def timesOut(i: Int): Boolean = timeout.exists(durations(i) > _)
    def fails(i: Int): Boolean = failing(i) || timesOut(i)

  private val scenarios: Gen[Scenario] =
    for
      tasks <- Gen.choose(0, 120)
      producers <- Gen.choose(1, 3)
      chunk <- Gen.choose(1, 16)
      produceDelay <- Gen.choose(0, 20)
      durations <- Gen.listOfN(tasks, Gen.choose(0, 50)).map(_.toVector)
      failing <- Gen.someOf(0 until tasks).map(_.toSet).map(s => s.filter(_ % 3 == 0))
      limit <- Gen.choose(1, 12)
      buffer <- Gen.choose(1, 40)
      policy <- Gen.choose(0, 2)
      window <- Gen.option(Gen.choose(1, 10))
      keys <- if window.isDefined then Gen.const(None) else Gen.option(Gen.choose(1, 6))
      timeout <- Gen.option(Gen.choose(20, 60))
      attempts <- Gen.frequency(2 -> Gen.const(1), 1 -> Gen.choose(2, 3))
      stop <- Gen.oneOf(
        Gen.const(Stop.Never),
        Gen.zip(Gen.choose(0, 400), Gen.choose(0, 60)).map(Stop.Drain(_, _)),
        Gen.choose(0, 400).map(Stop.Cancel(_))
      )
      sample <- Gen.frequency(3 -> Gen.choose(0, 12), 1 -> Gen.const(Defaults.failureSample))
    yield Scenario(
      tasks,
      producers,
      chunk,
      produceDelay,
      durations,
      failing,
      limit,
      buffer,
      policy,
      window,
      keys,
      timeout,
      attempts,
      stop,
      sample
    )

  final case class Observed(
      outcomes: Vector[TaskOutcome[Int, Int]],
      summary: Option[Summary[Int]],
      maxInFlight: Int,
      stillRunning: Int,
      maxPerKey: Int,
      firstStarts: Vector[Int], // tasks in the order their first attempt started
      deadLettered: Vector[Int],
      producersStarted: Int,
      producersFinalized: Int
  )

  /**
   * Runs `sc`; `withOutcomes = false` runs it without an outcome stream (so `outcomes` stays empty and a
   * success is recorded by the record stage's plain step), `rate` under a token bucket of that many
   * permits per second (burst 4).
   */
  /** Per key: one task at a time, and (with one producer) the key's tasks started in input order. */
  private def assertKeyOrder(sc: Scenario, ob: Observed): Unit =
    sc.keys.foreach { k =>
      if ob.firstStarts.nonEmpty then assertEquals(ob.maxPerKey, 1, s"two tasks of one key ran together")
      if sc.producers == 1 then
        (0 until k).foreach { key =>
          val mine = ob.firstStarts.filter(_ % k == key)
          assertEquals(mine, mine.sorted, s"key $key started out of order")
        }
    }

  private def execute(sc: Scenario, withOutcomes: Boolean = true, rate: Option[Int] = None): Observed =
    val program =
      for
        inFlight <- Ref.of[IO, (Int, Int)]((0, 0)) // (now, max)
        perKey <- Ref.of[IO, (Map[Int, Int], Int)]((Map.empty, 0)) // (running per key, max)
        starts <- Ref.of[IO, Vector[Int]](Vector.empty)
        key = (i: Int) => sc.keys.fold(i)(i % _)
        dead <- Ref.of[IO, Vector[Int]](Vector.empty)
        opened <- Ref.of[IO, Int](0)
        finalized <- Ref.of[IO, Int](0)
        collected <- Ref.of[IO, Vector[TaskOutcome[Int, Int]]](Vector.empty)
        handler = (i: Int) =>
          (inFlight.update((n, m) => (n + 1, math.max(m, n + 1))) *>
            perKey.update { (running, m) =>
              val n = running.getOrElse(key(i), 0) + 1
              (running.updated(key(i), n), math.max(m, n))
            } *>
            starts.update(v => if v.contains(i) then v else v :+ i) *>
            IO.sleep(sc.durations(i).millis) *>
            (if sc.failing(i) then IO.raiseError(new RuntimeException(s"task $i")) else IO.pure(i)))
            .guarantee(
              inFlight.update((n, m) => (n - 1, m)) *>
                perKey.update((running, m) => (running.updated(key(i), running(key(i)) - 1), m))
            )
        source = Source.partitioned[IO, Int](sc.producers) { p =>
          Stream.bracket(opened.update(_ + 1))(_ => finalized.update(_ + 1)) >>
            Stream
              .range(0, sc.tasks)
              .filter(_ % sc.producers == p)
              .chunkN(sc.chunk)
              .flatMap(c => Stream.exec(IO.sleep(sc.produceDelay.millis)) ++ Stream.chunk(c))
        }
        untimed = Pipeline(source)
          .process(handler)
          .withLimit(Limit.fixed(sc.limit))
          .withBuffer(sc.buffer)
          .withFailureSample(sc.sample)
          .withOrder(
            (sc.window, sc.keys) match
              case (Some(w), _) => TaskOrder.inputOrder(w)
              case (None, Some(k)) => TaskOrder.byKey[Int, Int](_ % k)
              case (None, None) => TaskOrder.unordered
          )
          .withRetry(
            if sc.attempts == 1 then Retry.none
            else Retry.exponential(5.millis, sc.attempts, jitter = Retry.Jitter.Off)
          )
        base = sc.timeout.fold(untimed)(t => untimed.withTaskTimeout((t * 1000 + 500).micros))
        limiter <- rate.traverse(r => RateLimiter.tokenBucket[IO](r.toDouble, burst = 4))
        limited = limiter.fold(base)(base.withRateLimit)
        pipeline = sc.policy match
          case 0 => limited.withFailurePolicy(FailurePolicy.skip)
          case 1 => limited.withFailurePolicy(FailurePolicy.deadLetter((i, _) => dead.update(_ :+ i)))
          case _ => limited.withFailurePolicy(FailurePolicy.failFast)
        summary <-
          if withOutcomes then
            pipeline.startWithOutcomes.use { (running, outcomes) =>
              val collect = outcomes.evalMap(o => collected.update(_ :+ o)).compile.drain
              sc.stop match
                case Stop.Never => IO.both(collect, running.join).map(r => Some(r._2))
                case Stop.Drain(at, deadline) =>
                  IO.both(collect, IO.sleep(at.millis) *> running.drain(deadline.millis)).map(r => Some(r._2))
                case Stop.Cancel(at) =>
                  IO.race(collect *> running.join, IO.sleep(at.millis)).map(_.left.toOption)
            }
          else
            pipeline.start.use { running =>
              sc.stop match
                case Stop.Never => running.join.map(Some(_))
                case Stop.Drain(at, deadline) =>
                  (IO.sleep(at.millis) *> running.drain(deadline.millis)).map(Some(_))
                case Stop.Cancel(at) => IO.race(running.join, IO.sleep(at.millis)).map(_.left.toOption)
            }
        // the run is over: nothing of it may still be running, even in virtual time's future
        _ <- IO.sleep(1.hour)
        flight <- inFlight.get
        keyed <- perKey.get
        started <- starts.get
        outcomes <- collected.get
        deadLettered <- dead.get
        open <- opened.get
        fin <- finalized.get
      yield Observed(outcomes, summary, flight._2, flight._1, keyed._2, started, deadLettered, open, fin)
    TestControl.executeEmbed(program).unsafeRunSync()

  property(
    "every received task ends in exactly one outcome (failures, timeouts, drains, cancellations); in-flight never exceeds the limit"
  ) {
    Prop.forAllNoShrink(scenarios) { sc =>
      val ob = execute(sc)
      assert(ob.maxInFlight <= sc.limit, s"max in flight ${ob.maxInFlight} > limit ${sc.limit}")
      assertEquals(ob.stillRunning, 0, "a handler outlived its run")
      assertEquals(ob.producersFinalized, ob.producersStarted, "a producer outlived its run")
      if sc.stop == Stop.Never then assertEquals(ob.producersStarted, sc.producers)
      val ids = ob.outcomes.map(_.task)
      assertEquals(ids.distinct.size, ids.size, s"a task has two outcomes: ${ids.diff(ids.distinct)}")
      ob.summary.foreach { s =>
        assertEquals(s.received, ids.size.toLong)
        assertEquals(s.received, s.succeeded + s.failed + s.notStarted)
        val failedOutcomes = ob.outcomes.collect { case f: TaskOutcome.Failed[Int, Int] => f }
        assertEquals(s.failed, failedOutcomes.size.toLong)
        // the summary keeps a bounded sample of the failures and counts them all, by disposition
        assertEquals(s.failures.size.toLong, math.min(sc.sample.toLong, s.failed))
        assert(s.failures.toSet.subsetOf(failedOutcomes.toSet), s"${s.failures} not among $failedOutcomes")
        assertEquals(
          s.dispositions.filter(_._2 > 0),
          failedOutcomes.groupBy(_.disposition).map((d, fs) => d -> fs.size.toLong)
        )
        assertEquals(
          s.unstarted.toSet,
          ob.outcomes.collect { case n: TaskOutcome.NotStarted[Int, Int] => n.task }.toSet
        )
        if sc.stop == Stop.Never && (sc.policy != 2 || !(0 until sc.tasks).exists(sc.fails)) then
          assertEquals(s.received, sc.tasks.toLong)
          assertEquals(ids.toSet, (0 until sc.tasks).toSet)
          assertEquals(s.notStarted, 0L)
        if sc.policy == 1 then
          assertEquals(
            ob.deadLettered.toSet,
            ob.outcomes.collect { case TaskOutcome.Failed(t, _, Disposition.DeadLettered, _) => t }.toSet
          )
      }
      ob.outcomes.foreach {
        case TaskOutcome.Succeeded(t, v, _) => assertEquals(v, t)
        case TaskOutcome.Failed(_, _, Disposition.Interrupted, _) => ()
        case TaskOutcome.Failed(t, e, _, _) =>
          assert(sc.fails(t), s"task $t failed but should not: $e")
          if sc.timesOut(t) && !sc.failing(t) then assert(e.isInstanceOf[TaskTimedOut], e.toString)
        case TaskOutcome.NotStarted(_, _) => ()
      }
      assertKeyOrder(sc, ob)
      sc.window.foreach { _ =>
        // input order holds for the tasks that ran (not-started ones come last)
        val ran = ob.outcomes.takeWhile(!_.isInstanceOf[TaskOutcome.NotStarted[?, ?]])
        if sc.producers == 1 then assertEquals(ran.map(_.task), ran.map(_.task).sorted)
      }
    }
  }

  property(
    "without an outcome stream, with or without a rate limit: every received task is counted exactly once"
  ) {
    Prop.forAllNoShrink(scenarios, Gen.option(Gen.choose(200, 5000))) { (sc, rate) =>
      val ob = execute(sc, withOutcomes = false, rate = rate)
      assert(ob.maxInFlight <= sc.limit, s"max in flight ${ob.maxInFlight} > limit ${sc.limit}")
      assertEquals(ob.stillRunning, 0, "a handler outlived its run")
      assertEquals(ob.producersFinalized, ob.producersStarted, "a producer outlived its run")
      ob.summary.foreach { s =>
        assertEquals(s.received, s.succeeded + s.failed + s.notStarted)
        val failed = s.failures.map(_.task)
        assertEquals(
          failed.distinct.size,
          failed.size,
          s"a task failed twice: ${failed.diff(failed.distinct)}"
        )
        assertEquals(s.unstarted.distinct.size, s.unstarted.size, "a task was returned twice")
        assertEquals(failed.toSet.intersect(s.unstarted.toSet), Set.empty[Int])
        s.failures.foreach { f =>
          if f.disposition != Disposition.Interrupted then assert(sc.fails(f.task), s"task ${f.task} failed")
        }
        // a task runs until it succeeds or its last attempt fails: it starts at least once per outcome
        assert(
          ob.firstStarts.size.toLong >= s.succeeded,
          s"${s.succeeded} succeeded, ${ob.firstStarts.size} ran"
        )
        if sc.stop == Stop.Never && (sc.policy != 2 || !(0 until sc.tasks).exists(sc.fails)) then
          assertEquals(s.received, sc.tasks.toLong)
          assertEquals(s.notStarted, 0L)
          assertEquals(s.succeeded + s.failed, sc.tasks.toLong)
          val fails = (0 until sc.tasks).filter(sc.fails).toSet
          assertEquals(s.failed, fails.size.toLong)
          assertEquals(failed.size, math.min(sc.sample, fails.size))
          assert(failed.toSet.subsetOf(fails), s"$failed not among $fails")
      }
      assertKeyOrder(sc, ob)
    }
  }

  property("fail-fast: the first failure stops the run and every other task is accounted for") {
    Prop.forAllNoShrink(scenarios.map(_.copy(policy = 2, stop = Stop.Never)).suchThat(_.failing.nonEmpty)) {
      sc =>
        val ob = execute(sc)
        val s = ob.summary.get
        s.stop match
          case StopReason.FailedFast(e) =>
            assert(
              e.getMessage.startsWith("task ") || e.isInstanceOf[java.util.concurrent.TimeoutException],
              e.toString
            )
          case other => fail(s"expected FailedFast, got $other")
        assertEquals(s.dispositions.get(Disposition.Aborted), Some(1L))
        assertEquals(s.received, s.succeeded + s.failed + s.notStarted)
        assert(s.unstarted.forall(t =>
          !ob.outcomes.exists {
            case TaskOutcome.Succeeded(x, _, _) => x == t
            case _ => false
          }
        ))
    }
  }
