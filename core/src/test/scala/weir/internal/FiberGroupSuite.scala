package weir.internal

import cats.effect.testkit.TestControl
import cats.effect.{IO, Outcome, Ref, Resource}
import cats.syntax.all.*
import munit.CatsEffectSuite

import scala.concurrent.duration.*

class FiberGroupSuite extends CatsEffectSuite:

  /** A group closed when the resource is released, as the engine closes its own in its release. */
  private val aGroup: Resource[IO, FiberGroup[IO]] = Resource.make(IO(FiberGroup.unsafe[IO]))(_.close)

  /** A member that counts its start, then waits forever and counts its cancellation once its finalizer ran. */
  private def member(begun: Ref[IO, Int], cancelled: Ref[IO, Int]): IO[Unit] =
    IO.uncancelable(poll =>
      begun.update(_ + 1) *> poll(IO.never[Unit]).onCancel(IO.sleep(1.second) *> cancelled.update(_ + 1))
    )

  test("closing cancels every running member at once and waits for each finalizer") {
    val run =
      for
        begun <- IO.ref(0)
        cancelled <- IO.ref(0)
        closedAt <- aGroup.use { group =>
          group.start(member(begun, cancelled)).replicateA(50).flatMap { started =>
            IO(assert(started.forall(identity))) *> IO.sleep(1.milli)
          }
        } *> IO.monotonic
        counts <- (begun.get, cancelled.get).tupled
      yield (closedAt, counts)
    // finalizers of 1 s each, run in parallel: the close ends at 1 s + the 1 ms the members ran
    TestControl.executeEmbed(run).map { case (closedAt, counts) =>
      assertEquals(counts, (50, 50))
      assertEquals(closedAt, 1.second + 1.milli)
    }
  }

  // in virtual time, a sleep ends only once every other fiber is idle: the members have run to their end
  test("a member that ended by itself is forgotten; the group outlives its members' errors") {
    val run = aGroup.use { group =>
      for
        _ <- group.start(IO.raiseError[Unit](new RuntimeException("a member's own failure")))
        _ <- group.start(IO.unit)
        _ <- IO.sleep(1.milli)
        left = group.size
        again <- group.start(IO.unit)
      yield (left, again)
    }
    TestControl.executeEmbed(run).map { case (left, again) =>
      assertEquals(left, 0)
      assert(again)
    }
  }

  test("a member's finalizer gets its outcome, after the member left the group") {
    val run = aGroup.use { group =>
      for
        seen <- IO.ref(List.empty[(String, Int)])
        // what the finalizer sees: the outcome, and how many members the group still holds (one member at
        // a time: 0 once it left)
        record = (outcome: Outcome[IO, Throwable, Int]) =>
          val kind = outcome.fold("canceled", _ => "errored", _ => "succeeded")
          IO(group.size).flatMap(left => seen.update((kind, left) :: _))
        _ <- group.startThen(IO.pure(1))(record) *> IO.sleep(1.milli)
        _ <- group.startThen(IO.raiseError[Int](new RuntimeException("its own failure")))(record)
        _ <- IO.sleep(1.milli)
        _ <- group.startThen(IO.never[Int])(record) *> IO.sleep(1.milli)
        _ <- group.close
        kinds <- seen.get
      yield kinds.reverse
    }
    TestControl.executeEmbed(run).map(kinds =>
      assertEquals(kinds, List(("succeeded", 0), ("errored", 0), ("canceled", 0)))
    )
  }

  test("nothing starts in a closed group") {
    val run = aGroup.allocated.flatMap { case (group, close) =>
      for
        ran <- IO.ref(false)
        _ <- close *> close // idempotent
        started <- group.start(ran.set(true))
        _ <- IO.sleep(1.milli)
        didRun <- ran.get
      yield (started, didRun, group.size)
    }
    TestControl.executeEmbed(run).map(result => assertEquals(result, (false, false, 0)))
  }

  test("a start racing a close on the real runtime leaves no member running (1000 races)") {
    val race =
      for
        begun <- IO.ref(0)
        cancelled <- IO.ref(0)
        allocated <- aGroup.allocated
        (group, close) = allocated
        // masked until it waits, so a cancellation cannot fall between the count and the finalizer
        body = IO.uncancelable(poll =>
          begun.update(_ + 1) *> poll(IO.never[Unit]).onCancel(cancelled.update(_ + 1))
        )
        starts = group.start(body)
        _ <- (starts.replicateA_(3), IO.cede *> close).parTupled
        // a member the close missed would still be running: its start counted, its cancellation not
        _ <- IO.sleep(2.millis)
        counts <- (begun.get, cancelled.get).tupled
      yield assertEquals(counts._1, counts._2, s"begun ${counts._1}, cancelled ${counts._2}")
    race.replicateA_(1000)
  }
