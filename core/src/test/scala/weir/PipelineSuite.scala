package weir

import cats.effect.{IO, Ref}
import cats.syntax.all.*
import cats.effect.testkit.TestControl
import fs2.{Chunk, Stream}
import munit.CatsEffectSuite

import scala.concurrent.duration.*

class PipelineSuite extends CatsEffectSuite:

  test("every task of a single producer succeeds and is counted once") {
    for
      seen <- Ref.of[IO, Set[Int]](Set.empty)
      summary <- Pipeline(Stream.range(0, 5000).covary[IO])
        .process(i => seen.update(_ + i))
        .withLimit(Limit.fixed(8))
        .run
      all <- seen.get
    yield
      assertEquals(summary.received, 5000L)
      assertEquals(summary.succeeded, 5000L)
      assertEquals(summary.stop, StopReason.Completed)
      assertEquals(all, (0 until 5000).toSet)
      assert(summary.allSucceeded)
  }

  test("a handler that throws instead of returning a failed effect fails that task, not the run") {
    val boom = new IllegalStateException("thrown, not raised")
    def handler(i: Int): IO[Int] = if i % 10 == 3 then throw boom else IO.pure(i)
    val runs = List(
      Pipeline(Stream.range(0, 100).covary[IO]).process(handler).withLimit(Limit.fixed(4)),
      Pipeline(Stream.range(0, 100).covary[IO]).process(handler).withLimit(Limit.fixed(4))
        .withOrder(TaskOrder.inputOrder),
      Pipeline(Stream.range(0, 100).covary[IO]).process(handler).withLimit(Limit.fixed(4))
        .withRetry(Retry.exponential(1.milli, maxAttempts = 2))
    )
    TestControl.executeEmbed(runs.traverse(_.run)).map(_.foreach { s =>
      assertEquals(s.received, 100L)
      assertEquals(s.succeeded, 90L)
      assertEquals(s.failures.map(_.task).sorted, Vector.tabulate(10)(_ * 10 + 3))
      assert(s.failures.forall(_.error eq boom), s.failures.map(_.error).toString)
    })
  }

  test("an empty source completes at once with nothing received") {
    Pipeline(Stream.empty.covary[IO]).process((_: Int) => IO.unit).run.map { s =>
      assertEquals(s.received, 0L)
      assertEquals(s.stop, StopReason.Completed)
    }
  }

  test("outcomes carries one outcome per task, successes and skipped failures") {
    Pipeline(Stream.range(0, 100).covary[IO])
      .process(i => if i % 10 == 0 then IO.raiseError(new RuntimeException(s"boom $i")) else IO.pure(i * 2))
      .withLimit(Limit.fixed(4))
      .outcomes
      .compile
      .toVector
      .map { outcomes =>
        assertEquals(outcomes.size, 100)
        assertEquals(outcomes.map(_.task).toSet, (0 until 100).toSet)
        val failed = outcomes.collect { case TaskOutcome.Failed(t, _, Disposition.Skipped, _) => t }
        assertEquals(failed.toSet, (0 until 100 by 10).toSet)
        outcomes.foreach {
          case TaskOutcome.Succeeded(t, v, _) => assertEquals(v, t * 2)
          case _ => ()
        }
      }
  }

  test("a partitioned source runs every partition") {
    Pipeline(Source.partitioned[IO, Int](4)(p => Stream.range(p * 100, p * 100 + 100)))
      .process(IO.pure)
      .outcomes
      .map(_.task)
      .compile
      .toVector
      .map(ts => assertEquals(ts.sorted, (0 until 400).toVector))
  }

  test("a paged source fetches every page in turn") {
    val source = Source.paged[IO, Int, Int](0) { page =>
      IO.pure(Page(Chunk.from(page * 10 until page * 10 + 10), Option.when(page < 9)(page + 1)))
    }
    Pipeline(source).process(IO.pure).run.map(s => assertEquals(s.succeeded, 100L))
  }

  test("a failing source is reported and the tasks it produced still run") {
    val boom = new RuntimeException("source broke")
    Pipeline(Stream.range(0, 10).covary[IO] ++ Stream.raiseError[IO](boom))
      .process(IO.pure)
      .run
      .map { s =>
        assertEquals(s.succeeded, 10L)
        assertEquals(s.stop, StopReason.SourceFailed(boom))
      }
  }

  test("bad settings throw nothing when set; the run fails in F with one error naming every value") {
    val b = Pipeline(Stream.range(0, 1).covary[IO]).process(IO.pure)
    // built and copied without a throw
    val bad = b
      .withLimit(Limit.fixed(0))
      .withBuffer(0)
      .withOrder(TaskOrder.inputOrder(-1))
      .withReleaseGrace(-1.second)
    val noPartitions = Pipeline(Source.partitioned[IO, Int](0)(_ => Stream.empty)).process(IO.pure)
    def refused(p: Pipeline[IO, Int, Int]): IO[String] =
      p.run.intercept[InvalidSettings].map(_.getMessage)
    for
      all <- refused(bad)
      limit <- refused(b.withLimit(Limit.fixed(-3)))
      partitions <- refused(noPartitions)
      outcomes <- bad.outcomes.compile.drain.intercept[InvalidSettings]
      piped <- Stream(1).covary[IO].through(Pipeline.pipe(IO.pure, _.withBuffer(-2))).compile.drain
        .intercept[InvalidSettings]
    yield
      assertEquals(
        all,
        "invalid Pipeline: concurrency limit must be > 0, was: 0; buffer capacity must be > 0, was: 0; " +
          "reorder window must be > 0, was: -1; release grace must be >= 0, was: -1 seconds"
      )
      assertEquals(limit, "invalid Pipeline: concurrency limit must be > 0, was: -3")
      assertEquals(partitions, "invalid Pipeline: number of partitions must be > 0, was: 0")
      assertEquals(outcomes.errors, bad.errors)
      assertEquals(piped.errors, List("buffer capacity must be > 0, was: -2"))
  }

  test("a running pipeline refuses a zero limit and a negative drain deadline") {
    Pipeline(Stream.never[IO].as(1)).process(IO.pure).start.use { running =>
      for
        e1 <- running.setLimit(0).attempt
        e2 <- running.drain(-1.second).attempt
        e3 <- running.requestDrain(-1.second).attempt
      yield
        assertEquals(e1.left.toOption.map(_.getMessage), Some("concurrency limit must be > 0, was: 0"))
        assertEquals(e2.left.toOption.map(_.getMessage), Some("drain deadline must be >= 0, was: -1 seconds"))
        assertEquals(e3.left.toOption.map(_.getMessage), Some("drain deadline must be >= 0, was: -1 seconds"))
    }
  }

  test("a drain request with a negative deadline requests nothing: the sources' end completes the run") {
    cats.effect.Deferred[IO, Unit].flatMap { end =>
      Pipeline(Stream.emit(1).covary[IO] ++ Stream.exec(end.get)).process(IO.pure).start.use { running =>
        running.requestDrain(-1.second).attempt *> end.complete(()) *> running.join
      }
    }.map(s => assertEquals((s.stop, s.succeeded), (StopReason.Completed, 1L)))
  }

  test("the failure policy set is the pipeline's, by kind; skip unless set") {
    val built = Pipeline(Stream.emit(1).covary[IO]).process(IO.pure)
    val kinds = List(
      built,
      built.withFailurePolicy(FailurePolicy.failFast),
      built.withFailurePolicy(FailurePolicy.deadLetter((_, _) => IO.unit))
    ).map(_.failurePolicy.kind)
    assertEquals(
      kinds,
      List(FailurePolicy.Kind.Skip, FailurePolicy.Kind.FailFast, FailurePolicy.Kind.DeadLetter)
    )
  }

  test("unordered: a slow task does not delay the others (virtual time)") {
    val run = Pipeline(Stream.range(0, 10).covary[IO])
      .process(i => IO.sleep(if i == 0 then 10.seconds else 1.second).as(i))
      .withLimit(Limit.fixed(2))
      .outcomes
      .evalMap(o => IO.monotonic.map(t => (o.task, t)))
      .compile
      .toVector
    TestControl.executeEmbed(run).map { done =>
      // slot 1 holds task 0 for 10 s; slot 2 runs tasks 1..9 back to back, one second each
      assertEquals(done.map(_._1), (1 to 9).toVector :+ 0)
      assertEquals(done.map(_._2.toSeconds), (1L to 9L).toVector :+ 10L)
    }
  }
