package weir

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import fs2.Stream
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}

import java.util.concurrent.atomic.AtomicBoolean
import scala.concurrent.duration.*

/**
 * Tasks that refuse to start ([[Refusable]]): asked last before the start, after admission and permit;
 * a refusal ends the task not started, published at once, counted in the summary's `refused`, and hands
 * its key on.
 */
class RefusalSuite extends CatsEffectSuite with ScalaCheckSuite:

  /** A task that refuses while `refuse` says so, counting how often it was asked. */
  final class Job(val id: Int, val key: String, refuse: Int => Option[String]) extends Refusable:
    @volatile var asked = 0
    def tryStart(): Option[String] =
      asked += 1
      refuse(id)

  private def jobs(n: Int, keys: Int)(refuse: Int => Option[String]): List[Job] = (0 until n).toList.map(i =>
    new Job(i, s"k${i % keys}", refuse)
  )

  test(
    "a refused task never starts, and its NotStarted(Refused) outcome is published while the run goes on"
  ) {
    val tasks = jobs(10, keys = 10)(i => Option.when(i % 3 == 0)(s"no $i"))
    for
      started <- Ref[IO].of(Vector.empty[Int])
      refusalSeen <- IO.deferred[Unit]
      outcomes <- Pipeline(Source.refusable(Stream.emits(tasks).covary[IO]))
        // the last task to run waits until the consumer has seen a refusal: were refusals published only
        // at the end of the run, it would wait for ever
        .process(j =>
          (if j.id == 8 then refusalSeen.get.timeout(10.seconds) else IO.unit) *> started.update(_ :+ j.id)
        )
        .withLimit(Limit.fixed(1))
        .outcomes
        .evalTap {
          case TaskOutcome.NotStarted(_, NotStartedReason.Refused(_)) => refusalSeen.complete(()).void
          case _ => IO.unit
        }
        .compile
        .toVector
      ran <- started.get
    yield
      assertEquals(ran, Vector(1, 2, 4, 5, 7, 8))
      val refused = outcomes.collect { case TaskOutcome.NotStarted(j, NotStartedReason.Refused(why)) =>
        (j.id, why)
      }
      assertEquals(refused, Vector(0 -> "no 0", 3 -> "no 3", 6 -> "no 6", 9 -> "no 9"))
      assertEquals(outcomes.size, 10)
  }

  test("the summary keeps refused tasks out of unstarted: notStarted == unstarted.size + refused") {
    val tasks = jobs(20, keys = 20)(i => Option.when(i % 4 == 1)("refused"))
    Pipeline(Source.refusable(Stream.emits(tasks).covary[IO]))
      .process(_ => IO.unit)
      .run
      .map { s =>
        assertEquals((s.received, s.succeeded, s.notStarted, s.refused), (20L, 15L, 5L, 5L))
        assertEquals(s.unstarted, Vector.empty)
        assertEquals(s.received, s.succeeded + s.failed + s.notStarted)
      }
  }

  test("a refused task hands its key on: the key's later tasks run, in order") {
    val tasks = jobs(9, keys = 3)(i => Option.when(i == 0 || i == 4)("refused"))
    for
      order <- Ref[IO].of(Vector.empty[Int])
      summary <- Pipeline(Source.refusable(Stream.emits(tasks).covary[IO]))
        .process(j => order.update(_ :+ j.id))
        .withLimit(Limit.fixed(3))
        .withOrder(TaskOrder.byKey(_.key))
        .run
      ran <- order.get
    yield
      assertEquals(summary.refused, 2L)
      assertEquals(ran.filter(_ % 3 == 0), Vector(3, 6))
      assertEquals(ran.filter(_ % 3 == 1), Vector(1, 7))
      assertEquals(ran.filter(_ % 3 == 2), Vector(2, 5, 8))
  }

  test("a task is asked after its rate-limit permit: one that starts refusing while it waits never starts") {
    val late = new AtomicBoolean(false)
    // whichever task gets the last permit is the one that waited past the change
    val tasks = jobs(3, keys = 3)(_ => Option.when(late.get)("revoked while waiting"))
    val run =
      for
        limiter <- RateLimiter.tokenBucket[IO](permitsPerSecond = 1.0, burst = 1)
        // the permits come at t = 0, 1 and 2 s; the tasks start refusing at t = 1.5 s
        _ <- (IO.sleep(1500.millis) *> IO(late.set(true))).start
        summary <- Pipeline(Source.refusable(Stream.emits(tasks).covary[IO]))
          .process(_ => IO.unit)
          .withLimit(Limit.fixed(3))
          .withRateLimit(limiter)
          .run
      yield summary
    TestControl.executeEmbed(run).map(s =>
      assertEquals((s.succeeded, s.refused, tasks.map(_.asked)), (2L, 1L, List(1, 1, 1)))
    )
  }

  test("a source that is not refusable never asks") {
    val tasks = jobs(5, keys = 5)(_ => Some("would refuse"))
    Pipeline(Source(Stream.emits(tasks).covary[IO])).process(_ => IO.unit).run.map { s =>
      assertEquals((s.succeeded, s.refused), (5L, 0L))
      assertEquals(tasks.map(_.asked), List.fill(5)(0))
    }
  }

  property("whatever refuses, every task ends exactly once: run or refused") {
    Prop.forAllNoShrink(
      Gen.choose(0, 60),
      Gen.choose(1, 8),
      Gen.choose(1, 5),
      Gen.listOfN(60, Gen.oneOf(true, false))
    ) {
      (n, limit, keys, refusals) =>
        val tasks = jobs(n, keys)(i => Option.when(refusals(i))("no"))
        val result =
          Pipeline(Source.refusable(Stream.emits(tasks).covary[IO]))
            .process(IO.pure)
            .withLimit(Limit.fixed(limit))
            .withOrder(TaskOrder.byKey(_.key))
            .outcomes
            .compile
            .toVector
            .map { outcomes =>
              val ids = outcomes.map(_.task.id)
              val refused = outcomes.collect { case TaskOutcome.NotStarted(j, NotStartedReason.Refused(_)) =>
                j.id
              }
              assertEquals(ids.sorted, (0 until n).toVector)
              assertEquals(refused.sorted, (0 until n).filter(refusals).toVector)
            }
        import cats.effect.unsafe.implicits.global
        TestControl.executeEmbed(result).unsafeRunSync()
    }
  }
