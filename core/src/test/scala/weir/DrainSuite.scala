package weir

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import fs2.Stream
import munit.CatsEffectSuite

import scala.concurrent.duration.*

/** Drain, fail-fast, release and limit changes, with exact expectations in virtual time. */
class DrainSuite extends CatsEffectSuite:

  private def sleepy(n: Int, each: FiniteDuration) =
    Pipeline(Stream.range(0, n).covary[IO]).process(i => IO.sleep(each).as(i))

  test("drain lets in-flight tasks finish and returns every unstarted task") {
    val run = sleepy(100, 1.second).withLimit(Limit.fixed(4)).withBuffer(10).start.use { running =>
      IO.sleep(2500.millis) *> running.drain(10.seconds)
    }
    TestControl.executeEmbed(run).map { s =>
      // 8 done by 2 s, 4 running at 2.5 s finish at 3 s; buffer (10) and the producer's chunk hold the rest
      assertEquals(s.stop, StopReason.Drained)
      assertEquals(s.succeeded, 12L)
      assertEquals(s.failed, 0L)
      assertEquals(s.received, s.succeeded + s.notStarted)
      assertEquals(s.unstarted.size.toLong, s.notStarted)
      assertEquals(s.unstarted.toSet.intersect((0 until 12).toSet), Set.empty[Int])
      assertEquals(s.elapsed, 3.seconds)
    }
  }

  test("a drain deadline interrupts what still runs and records it as interrupted") {
    val run = sleepy(10, 10.seconds).withLimit(Limit.fixed(3)).start.use { running =>
      IO.sleep(1.second) *> running.drain(2.seconds)
    }
    TestControl.executeEmbed(run).map { s =>
      assertEquals(s.succeeded, 0L)
      assertEquals(s.failures.map(_.task).toSet, Set(0, 1, 2))
      assert(s.failures.forall(f =>
        f.disposition == Disposition.Interrupted && f.error.isInstanceOf[TaskInterrupted]
      ))
      assertEquals(s.unstarted.toSet, (3 until 10).toSet)
      assertEquals(s.elapsed, 3.seconds)
    }
  }

  test("cancelling a drain stops only the wait: the drain completes and join sees it") {
    val run = sleepy(10, 1.second).withLimit(Limit.fixed(2)).start.use { running =>
      IO.sleep(500.millis) *> running.drain(5.seconds).timeout(100.millis).attempt *> running.join
    }
    TestControl.executeEmbed(run).map { s =>
      assertEquals(s.stop, StopReason.Drained)
      assertEquals(s.succeeded, 2L)
      assertEquals(s.unstarted.toSet, (2 until 10).toSet)
    }
  }

  test("fail-fast interrupts in-flight work and reports which tasks never ran") {
    val run = Pipeline(Stream.range(0, 50).covary[IO])
      .process(i =>
        if i == 5 then IO.sleep(1.second) *> IO.raiseError(new RuntimeException("five"))
        else IO.sleep(3.seconds)
      )
      .withLimit(Limit.fixed(8))
      .withBuffer(16)
      .withFailurePolicy(FailurePolicy.failFast)
      .run
    TestControl.executeEmbed(run).map { s =>
      assertEquals(s.elapsed, 1.second)
      assertEquals(s.succeeded, 0L)
      assertEquals(s.failures.collect { case f if f.disposition == Disposition.Aborted => f.task }, Vector(5))
      assertEquals(s.failures.count(_.disposition == Disposition.Interrupted), 7)
      assertEquals(s.unstarted.toSet, (8 until s.received.toInt).toSet)
      s.stop match
        case StopReason.FailedFast(e) => assertEquals(e.getMessage, "five")
        case other => fail(s"expected FailedFast, got $other")
    }
  }

  test("dead-letter hands the task and its error to the sink; a failing sink is recorded, not lost") {
    for
      dead <- Ref.of[IO, Vector[(Int, String)]](Vector.empty)
      s <- Pipeline(Stream.range(0, 10).covary[IO])
        .process(i => if i % 2 == 0 then IO.raiseError(new RuntimeException(s"bad $i")) else IO.pure(i))
        .withFailurePolicy(FailurePolicy.deadLetter { (i, e) =>
          if i == 4 then IO.raiseError(new RuntimeException("sink down"))
          else dead.update(_ :+ (i -> e.getMessage))
        })
        .run
      letters <- dead.get
    yield
      assertEquals(letters.sortBy(_._1), Vector(0 -> "bad 0", 2 -> "bad 2", 6 -> "bad 6", 8 -> "bad 8"))
      val sinkFailed = s.failures.filter(_.disposition == Disposition.DeadLetterFailed)
      assertEquals(sinkFailed.map(_.task), Vector(4))
      assertEquals(sinkFailed.head.error.getSuppressed.map(_.getMessage).toList, List("sink down"))
      assertEquals(s.failed, 5L)
  }

  test("releasing a started run interrupts in-flight tasks and leaves nothing running") {
    val run =
      for
        running <- Ref.of[IO, Int](0)
        _ <- Pipeline(Stream.range(0, 1000).covary[IO])
          .process(_ => (running.update(_ + 1) *> IO.never[Unit]).guarantee(running.update(_ - 1)))
          .withLimit(Limit.fixed(16))
          .start
          .use(_ => IO.sleep(1.second))
        left <- running.get
      yield left
    TestControl.executeEmbed(run).map(left => assertEquals(left, 0))
  }

  test("cancelling run leaks no fiber: nothing is left to run afterwards") {
    val run = sleepy(1000, 1.second).withLimit(Limit.fixed(10)).run.timeoutTo(2500.millis, IO.unit)
    // executeEmbed fails if the program hangs; TestControl.execute lets us check nothing else is scheduled
    TestControl.execute(run).flatMap { control =>
      control.tickAll *> control.results.map(r => assert(r.exists(_.isSuccess), r.toString)) *>
        control.nextInterval.map(next => assertEquals(next, Duration.Zero))
    }
  }

  test("raising the limit starts waiting tasks at once; lowering it never interrupts") {
    val run =
      for
        flight <- Ref.of[IO, (Int, Vector[(Long, Int)])]((0, Vector.empty)) // (now, samples at each start)
        handler = (_: Int) =>
          (IO.monotonic.flatMap(t => flight.update((n, v) => (n + 1, v :+ (t.toSeconds, n + 1)))) *>
            IO.sleep(1.second))
            .guarantee(flight.update((n, v) => (n - 1, v)))
        s <- Pipeline(Stream.range(0, 40).covary[IO]).process(handler).withLimit(Limit.fixed(2)).start.use {
          r =>
            // the changes fall between the tasks' ends (whole and half seconds), so that no figure below hangs
            // on which of two events at one instant runs first
            IO.sleep(2500.millis) *> r.setLimit(8) *> IO.sleep(1750.millis) *> r.setLimit(1) *> r.join
        }
        samples <- flight.get
      yield (s, samples._2)
    TestControl.executeEmbed(run).map { (s, starts) =>
      assertEquals(s.succeeded, 40L)
      def maxAt(sec: Long) = starts.filter(_._1 == sec).map(_._2).maxOption.getOrElse(0)
      assertEquals(maxAt(0), 2)
      assertEquals(maxAt(2), 8) // raised at 2.5 s: six start at once, two more at 3 s
      assertEquals(maxAt(3), 8)
      // lowered at 4.25 s while eight run: none starts when six end at 4.5 s, nor until the two started at
      // 4 s end at 5 s; from then on one at a time
      assert(starts.filter(_._1 >= 5).forall(_._2 == 1), starts.filter(_._1 >= 5).toString)
      // started by then: 2 at each of 0, 1 and 2 s, 6 at 2.5 s, 2 at 3 s, 6 at 3.5 s, 2 at 4 s (22); the 18
      // left run one after another from 5 s
      assertEquals(s.elapsed, 23.seconds)
    }
  }

  test("unbounded starts every buffered task without waiting") {
    val run = sleepy(500, 1.second).withLimit(Limit.unbounded).withBuffer(1000).run
    TestControl.executeEmbed(run).map { s =>
      assertEquals(s.succeeded, 500L)
      assertEquals(s.elapsed, 1.second)
    }
  }

  test("a drain requested before the sources end ends the run drained; their end alone completes it") {
    // a source that ends when told, its tasks all done by then: the run ends the moment it ends
    def run(requestFirst: Boolean) =
      cats.effect.Deferred[IO, Unit].flatMap { end =>
        Pipeline(Stream.range(0, 3).covary[IO] ++ Stream.exec(end.get)).process(IO.pure).start.use {
          running =>
            IO.sleep(1.second) *>
              (if requestFirst then running.requestDrain(1.minute) else IO.unit) *> end.complete(()) *>
              running.join
        }
      }
    TestControl.executeEmbed(run(requestFirst = true).product(run(requestFirst = false))).map {
      (requested, ended) =>
        assertEquals(
          (requested.stop, requested.succeeded, requested.elapsed),
          (StopReason.Drained, 3L, 1.second)
        )
        assertEquals((ended.stop, ended.succeeded), (StopReason.Completed, 3L))
    }
  }

  test("a blocking handler runs off the compute pool") {
    Pipeline(Stream.range(0, 8).covary[IO])
      .processBlocking { _ =>
        Thread.sleep(20)
        Thread.currentThread().getName
      }
      .withLimit(Limit.fixed(8))
      .outcomes
      .collect { case TaskOutcome.Succeeded(_, name, _) => name }
      .compile
      .toVector
      .map { names =>
        assertEquals(names.size, 8)
        // compute workers are named io-compute-<n>; blocking work runs on io-compute-blocker-<n> or io-blocker
        assert(names.forall(n => !n.matches("io-compute-\\d+")), names.toString)
      }
  }
