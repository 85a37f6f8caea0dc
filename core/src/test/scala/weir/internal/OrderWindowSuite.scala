package weir.internal

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}

import scala.concurrent.duration.*

class OrderWindowSuite extends CatsEffectSuite with ScalaCheckSuite:

  private def admit(w: OrderWindow[IO], seq: Long) = IO.uncancelable(poll => w.admit(poll, seq))

  /** Marks `seq` finished and runs what wakes the admissions it let in, as the recorder does. */
  private def finish(w: OrderWindow[IO], seq: Long): IO[Unit] = IO.defer(w.finished(seq).getOrElse(IO.unit))

  test("positions inside the window are admitted at once; the next one waits for the oldest to finish") {
    val run =
      for
        w <- OrderWindow[IO](4)
        _ <- (0L until 4L).toList.traverse_(admit(w, _))
        admitted <- Ref.of[IO, Boolean](false)
        waiter <- (admit(w, 4) *> admitted.set(true)).start
        _ <- IO.sleep(1.second)
        before <- admitted.get
        waiting <- w.waiting
        _ <- finish(w, 1) *> finish(w, 2) // not the oldest: the window does not move
        _ <- IO.sleep(1.second)
        stillBefore <- admitted.get
        _ <- finish(w, 0) // slides over 0, 1, 2: prefix 3
        _ <- waiter.joinWithNever
        oldest <- w.oldestUnfinished
        left <- w.waiting
      yield (before, waiting, stillBefore, oldest, left)
    TestControl.executeEmbed(run).map { (before, waiting, stillBefore, oldest, left) =>
      assert(!before)
      assertEquals(waiting, 1)
      assert(!stillBefore)
      assertEquals(oldest, 3L)
      assertEquals(left, 0)
    }
  }

  test("a cancelled admission forgets its place and loses nothing") {
    val run =
      for
        w <- OrderWindow[IO](2)
        waiter <- admit(w, 5).start
        _ <- IO.sleep(1.second)
        waitingBefore <- w.waiting
        _ <- waiter.cancel
        waitingAfter <- w.waiting
        _ <- (0L until 6L).toList.traverse_(finish(w, _))
        oldest <- w.oldestUnfinished
      yield (waitingBefore, waitingAfter, oldest)
    TestControl.executeEmbed(run).map { (before, after, oldest) =>
      assertEquals(before, 1)
      assertEquals(after, 0)
      assertEquals(oldest, 6L)
    }
  }

  test("a position finished beyond the ring (never admitted) is counted when the window reaches it") {
    for
      w <- OrderWindow[IO](2)
      _ <- finish(w, 5) // beyond prefix + window: kept aside
      _ <- finish(w, 3) // beyond too
      _ <- finish(w, 1) // inside the ring
      a <- w.oldestUnfinished
      _ <- finish(w, 0) // slides over 0, 1
      b <- w.oldestUnfinished
      _ <- finish(w, 2) // slides over 2, 3
      c <- w.oldestUnfinished
      _ <- finish(w, 4) // slides over 4, 5
      d <- w.oldestUnfinished
    yield assertEquals(List(a, b, c, d), List(0L, 2L, 4L, 6L))
  }

  test("a zero window is refused, naming the value") {
    interceptMessageIO[IllegalArgumentException]("reorder window must be > 0, was: 0")(OrderWindow[IO](0))
  }

  // finishing positions 0 until n in any order that respects the window: the prefix is always the oldest
  // unfinished position, every admission inside the window is immediate, and no slot is confused
  property("any finishing order keeps the prefix at the oldest unfinished position") {
    val gen =
      for
        window <- Gen.choose(1, 8)
        n <- Gen.choose(0, 60)
        seed <- Gen.long
      yield (window, n, seed)
    Prop.forAll(gen) { (window, n, seed) =>
      val rnd = new scala.util.Random(seed)
      val run =
        for
          w <- OrderWindow[IO](window)
          // simulate: keep a set of admitted, unfinished positions; finish a random one each step
          result <- {
            def loop(next: Long, running: Vector[Long], finished: Set[Long]): IO[Option[String]] =
              val canAdmit = next < n &&
                (next < (0L until n.toLong).find(!finished(_)).getOrElse(n.toLong) + window)
              if canAdmit && (running.isEmpty || rnd.nextBoolean()) then
                IO.uncancelable(poll => w.admit(poll, next)).timeout(1.second).attempt.flatMap {
                  case Left(_) => IO.pure(Some(s"position $next not admitted inside the window"))
                  case Right(_) => loop(next + 1, running :+ next, finished)
                }
              else if running.nonEmpty then
                val i = rnd.nextInt(running.size)
                val p = running(i)
                val done = finished + p
                finish(w, p) *> w.oldestUnfinished.flatMap { oldest =>
                  val expected = (0L until n.toLong).find(!done(_)).getOrElse(n.toLong)
                  if oldest != expected then IO.pure(Some(s"oldest $oldest, expected $expected after $p"))
                  else loop(next, running.patch(i, Nil, 1), done)
                }
              else IO.pure(None)
            loop(0L, Vector.empty, Set.empty)
          }
          oldest <- w.oldestUnfinished
        yield (result, oldest)
      // virtual time: an admission that would wait times out after one virtual second
      val (result, oldest) = TestControl.executeEmbed(run).unsafeRunSync()
      assertEquals(result, None)
      assertEquals(oldest, n.toLong)
    }
  }
