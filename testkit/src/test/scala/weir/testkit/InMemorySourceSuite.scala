package weir.testkit

import cats.effect.IO
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}
import weir.*

import scala.concurrent.duration.*

/**
 * The in-memory durable source ([[InMemorySource]]), in virtual time: what each end of an item makes of it
 * (acknowledged, or back in the queue, counted or not), a drain, a cancel, a withdrawal and a release; then,
 * whatever the handlers do and whenever the drain comes, every value is acknowledged or waiting, once.
 */
class InMemorySourceSuite extends CatsEffectSuite with ScalaCheckSuite:

  private def queueOf(values: String*): IO[(InMemorySource[IO, String], Vector[Long])] =
    InMemorySource[IO, String].flatMap(q => q.enqueue(values*).map(ids => (q, ids)))

  /** The attempts each value gets in a run that handles everything at once. */
  private def attempts(queue: InMemorySource[IO, String]): IO[Map[String, Int]] =
    IO.ref(Map.empty[String, Int]).flatMap { seen =>
      queue.start(source => Pipeline(source).process(i => seen.update(_.updated(i.value, i.attempt))))
        .use(run => IO.sleep(1.minute) *> run.drain(1.minute)) *> seen.get
    }

  test("an item that ran is acknowledged, once; the queue is then empty") {
    TestControl.executeEmbed(queueOf("a", "b", "c").flatMap { (queue, _) =>
      for
        summary <- queue.start(source => Pipeline(source).process(i => IO.sleep(1.second).as(i.value)))
          .use(run => IO.sleep(5.seconds) *> run.drain(1.minute))
        acked <- queue.acknowledged
        left <- queue.available
      yield
        assertEquals((summary.succeeded, summary.stop), (3L, StopReason.Drained))
        assertEquals((acked.sorted, left), (Vector("a", "b", "c"), Vector.empty))
    })
  }

  test("a failure the policy skips is acknowledged too: the item ran to an outcome") {
    TestControl.executeEmbed(queueOf("bad").flatMap { (queue, _) =>
      queue.start(source => Pipeline(source).process(_ => IO.raiseError[Unit](new RuntimeException("no"))))
        .use(run => IO.sleep(1.second) *> run.drain(1.minute)) *> queue.acknowledged
    }).map(acked => assertEquals(acked, Vector("bad")))
  }

  test("a drain hands back the items that never started, uncounted, and they run in a later run") {
    TestControl.executeEmbed(queueOf("a", "b", "c").flatMap { (queue, _) =>
      for
        summary <- queue.start(source =>
          Pipeline(source).process(_ => IO.sleep(10.seconds)).withLimit(Limit.fixed(1))
        ).use(run => IO.sleep(1.second) *> run.drain(1.minute))
        waiting <- queue.available
        later <- attempts(queue)
      yield
        assertEquals((summary.succeeded, summary.unstarted.size), (1L, 2))
        assertEquals(waiting.size, 2)
        assertEquals(later.values.toSet, Set(1)) // handed back uncounted
    })
  }

  test(
    "a cancelled item that runs is interrupted and runs again, counted; one not started is refused, uncounted"
  ) {
    TestControl.executeEmbed(queueOf("running", "waiting").flatMap { (queue, ids) =>
      for
        seen <- IO.ref(Vector.empty[(String, Int)])
        summary <- queue.start(source =>
          Pipeline(source)
            .process(i => seen.update(_ :+ (i.value, i.attempt)) *> IO.sleep(10.seconds))
            .withLimit(Limit.fixed(1))
        ).use(run =>
          IO.sleep(1.second) *> queue.cancel(ids(1), "not wanted").flatMap(told => IO(assert(told))) *>
            queue.cancel(ids(0), "stop").flatMap(told => IO(assert(told))) *> IO.sleep(1.minute) *>
            run.drain(1.minute)
        )
        told <- queue.cancel(ids(0), "after the run")
        attempts <- seen.get
        acked <- queue.acknowledged
      yield
        // each went back to the queue, and the same run handed it out again
        assertEquals((summary.failed, summary.refused, summary.succeeded), (1L, 1L, 2L))
        assertEquals(summary.failures.map(_._2.getMessage), Vector("task interrupted: stop"))
        assertEquals(attempts.sorted, Vector(("running", 1), ("running", 2), ("waiting", 1)))
        assertEquals((told, acked.sorted), (false, Vector("running", "waiting")))
    })
  }

  test("a withdrawn item's running attempt ends and its retry is refused; it runs again, counted") {
    TestControl.executeEmbed(queueOf("flaky").flatMap { (queue, ids) =>
      for
        tries <- IO.ref(Vector.empty[Int])
        summary <- queue.start(source =>
          Pipeline(source)
            .process(i =>
              tries.update(_ :+ i.attempt) *> IO.sleep(2.seconds) *>
                IO.raiseError[Unit](new RuntimeException("down")).whenA(i.attempt == 1)
            )
            .withRetry(Retry.exponential(1.second, maxAttempts = 3))
        ).use(run =>
          IO.sleep(1.second) *> queue.withdraw(ids(0), "moved") *> IO.sleep(1.minute) *> run.drain(1.minute)
        )
        ran <- tries.get
        acked <- queue.acknowledged
      yield
        // the first attempt under way ended; its retry was refused, so the item went back, counted
        assertEquals(ran, Vector(1, 2))
        assertEquals(summary.failures.map(_._2.getMessage), Vector("task interrupted: moved"))
        assertEquals((summary.succeeded, acked), (1L, Vector("flaky")))
    })
  }

  test("a release gives back the item it interrupted, counted, and those it never started, uncounted") {
    TestControl.executeEmbed(queueOf("a", "b", "c").flatMap { (queue, _) =>
      for
        _ <- queue.start(source => Pipeline(source).process(_ => IO.never[Unit]).withLimit(Limit.fixed(1)))
          .use(_ => IO.sleep(1.second))
        acked <- queue.acknowledged
        later <- attempts(queue)
      yield
        assertEquals(acked, Vector.empty)
        assertEquals(later.values.toVector.sorted, Vector(1, 1, 2))
    })
  }

  property(
    "whatever the handlers do and whenever the drain comes, each value is acknowledged or waits, once"
  ) {
    val plan =
      for
        n <- Gen.choose(0, 12)
        durations <- Gen.listOfN(n, Gen.choose(0, 5))
        failing <- Gen.listOfN(n, Gen.oneOf(true, false))
        cancels <- Gen.listOfN(n, Gen.option(Gen.choose(0, 6)))
        drainAt <- Gen.choose(0, 8)
        limit <- Gen.choose(1, 4)
      yield (durations, failing, cancels, drainAt, limit)
    Prop.forAllNoShrink(plan) { (durations, failing, cancels, drainAt, limit) =>
      val values = durations.indices.map(i => s"v$i").toVector
      val program = queueOf(values*).flatMap { (queue, ids) =>
        val handle = (item: InMemorySource.Item[String]) =>
          val i = item.value.drop(1).toInt
          IO.sleep(durations(i).seconds) *>
            IO.raiseError[Unit](new RuntimeException("failed")).whenA(failing(i))
        val cancelling = cancels.zipWithIndex.collect { case (Some(at), i) => (at, ids(i)) }
          .parTraverse_((at, id) => IO.sleep(at.seconds) *> queue.cancel(id, "cancelled"))
        queue.start(source => Pipeline(source).process(handle).withLimit(Limit.fixed(limit)))
          .use(run => cancelling.start *> IO.sleep(drainAt.seconds) *> run.drain(2.seconds)) *>
          (queue.acknowledged, queue.available).tupled
      }
      import cats.effect.unsafe.implicits.global
      val (acked, waiting) = TestControl.executeEmbed(program).unsafeRunSync()
      assertEquals((acked ++ waiting).sorted, values.sorted)
    }
  }
