package weir

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import fs2.Stream
import munit.CatsEffectSuite

import scala.concurrent.duration.*

/** The pipe form: `stream.through(Pipeline.pipe(...))` is the builder's `outcomes`, settings included. */
class PipeSuite extends CatsEffectSuite:

  private val tasks: Stream[IO, Int] = Stream.range(0, 200).covary[IO]

  /** An outcome without its error instance (each failed attempt throws a new one). */
  private def shape(o: TaskOutcome[Int, Int]): (Int, Either[String, Int]) = o match
    case TaskOutcome.Succeeded(t, v, _) => (t, Right(v))
    case TaskOutcome.Failed(t, e, d, _) => (t, Left(s"${e.getMessage} $d"))
    case TaskOutcome.NotStarted(t, r) => (t, Left(r.toString))

  test("through the pipe, every task ends in one outcome, as with the builder") {
    val handler =
      (i: Int) => if i % 10 == 3 then IO.raiseError(new RuntimeException(s"bad $i")) else IO.pure(i * 2)
    for
      piped <- tasks.through(Pipeline.pipe(handler)).compile.toVector
      built <- Pipeline(tasks).process(handler).outcomes.compile.toVector
    yield
      assertEquals(piped.map(_.task).sorted, Vector.range(0, 200))
      assertEquals(piped.map(shape).toSet, built.map(shape).toSet)
      assertEquals(piped.count(_.isInstanceOf[TaskOutcome.Failed[?, ?]]), 20)
  }

  test("the settings of the pipe form apply: the limit bounds in-flight tasks and input order is kept") {
    // task i sleeps (i % 5) ms: out of order on completion, so only the reorder window restores order
    val program =
      for
        inFlight <- Ref[IO].of(0)
        most <- Ref[IO].of(0)
        handler = (i: Int) =>
          (inFlight.updateAndGet(_ + 1).flatMap(n => most.update(_.max(n))) *> IO.sleep((i % 5).millis))
            .guarantee(inFlight.update(_ - 1))
            .as(i)
        out <- tasks
          .through(Pipeline.pipe(handler, _.withLimit(Limit.fixed(3)).withOrder(TaskOrder.inputOrder)))
          .collect { case TaskOutcome.Succeeded(_, v, _) => v }
          .compile
          .toVector
        peak <- most.get
      yield (out, peak)
    TestControl.executeEmbed(program).map { (out, peak) =>
      assertEquals(out, Vector.range(0, 200))
      assertEquals(peak, 3)
    }
  }

  test("stopping the output early stops the run: no task starts after the consumer is gone") {
    val program =
      for
        started <- Ref[IO].of(0)
        first <- Stream
          .range(0, 1000)
          .covary[IO]
          .through(Pipeline.pipe(
            (i: Int) => started.update(_ + 1) *> IO.sleep(1.second).as(i),
            _.withLimit(Limit.fixed(4))
          ))
          .take(4)
          .compile
          .toVector
        before <- started.get
        _ <- IO.sleep(10.seconds)
        after <- started.get
      yield (first.size, before, after)
    // the first four outcomes come after 1 s; the run is released then, so what had started by then is
    // interrupted and nothing starts in the next 10 s
    TestControl.executeEmbed(program).map { (n, before, after) =>
      assertEquals(n, 4)
      assertEquals(after, before)
    }
  }
