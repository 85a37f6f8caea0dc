package weir.console.internal

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import munit.CatsEffectSuite

import java.time.Instant
import scala.concurrent.duration.*

/** [[Snapshot]] in virtual time: who waits, when a reading starts, and how many run. */
class SnapshotSuite extends CatsEffectSuite:

  /** Readings numbered from 1, each taking `took` (or failing, when `fails` says so for its number). */
  private final class Reads(took: FiniteDuration, fails: Int => Boolean = _ => false):
    val started: Ref[IO, Int] = Ref.unsafe(0)
    val read: IO[Int] = started.updateAndGet(_ + 1).flatMap { n =>
      IO.sleep(took) *> IO.raiseWhen(fails(n))(new RuntimeException(s"reading $n failed")).as(n)
    }

  private def virtual(body: IO[Unit]): IO[Unit] = TestControl.executeEmbed(body)

  private def at(d: FiniteDuration): Instant = Instant.ofEpochMilli(d.toMillis)

  test("the first get waits for a reading; gets before it is due share it") {
    virtual {
      val reads = Reads(100.millis)
      Snapshot.resource(reads.read, every = 2.seconds).use { snapshot =>
        for
          first <- snapshot.get
          t1 <- IO.monotonic
          _ <- IO.sleep(1900.millis)
          shared <- snapshot.get
          n <- reads.started.get
        yield
          assertEquals((first, t1), (Snapshot.Taken(1, at(0.millis)), 100.millis))
          assertEquals((shared, n), (first, 1))
      }
    }
  }

  test("a get that finds it due answers with the last reading at once and starts one reading") {
    virtual {
      val reads = Reads(100.millis)
      Snapshot.resource(reads.read, every = 2.seconds).use { snapshot =>
        for
          _ <- snapshot.get
          // due 2 s after the first reading ended, at 100 ms
          _ <- IO.sleep(2.seconds)
          t0 <- IO.monotonic
          stale <- (snapshot.get, snapshot.get, snapshot.get).tupled
          t1 <- IO.monotonic
          // the reading runs on a fiber of its own: a moment later it has begun, and is not over
          _ <- IO.sleep(1.milli)
          n <- reads.started.get
          // past its end, at 2.2 s: a wake-up at the same instant could run before the reading's
          _ <- IO.sleep(100.millis)
          fresh <- snapshot.get
          after <- reads.started.get
        yield
          assertEquals(t1, t0)
          assertEquals(
            stale,
            (
              Snapshot.Taken(1, at(0.millis)),
              Snapshot.Taken(1, at(0.millis)),
              Snapshot.Taken(1, at(0.millis))
            )
          )
          assertEquals(n, 2)
          assertEquals((fresh, after), (Snapshot.Taken(2, at(2100.millis)), 2))
      }
    }
  }

  test("a reading is not followed by the next one sooner than nine times its duration") {
    virtual {
      val reads = Reads(1.second)
      Snapshot.resource(reads.read, every = 2.seconds).use { snapshot =>
        for
          _ <- snapshot.get
          // ended at 1 s: the next is due at 1 s + 9 s
          _ <- IO.sleep(9.seconds - 1.milli)
          _ <- snapshot.get
          _ <- IO.sleep(1.milli)
          early <- reads.started.get
          _ <- snapshot.get
          _ <- IO.sleep(1.milli)
          due <- reads.started.get
        yield assertEquals((early, due), (1, 2))
      }
    }
  }

  test("a failed reading keeps the last one, and the next is tried `every` later") {
    virtual {
      val reads = Reads(100.millis, fails = _ == 2)
      Snapshot.resource(reads.read, every = 2.seconds).use { snapshot =>
        for
          _ <- snapshot.get
          _ <- IO.sleep(2.seconds)
          _ <- snapshot.get // starts reading 2, which fails at 2.2 s
          _ <- IO.sleep(101.millis)
          kept <- snapshot.get
          _ <- IO.sleep(2.seconds - 2.millis)
          _ <- snapshot.get
          _ <- IO.sleep(1.milli)
          notYet <- reads.started.get
          _ <- snapshot.get
          _ <- IO.sleep(101.millis)
          third <- snapshot.get
        yield
          assertEquals(kept, Snapshot.Taken(1, at(0.millis)))
          assertEquals(notYet, 2)
          assertEquals(third, Snapshot.Taken(3, at(4200.millis)))
      }
    }
  }

  test("when the first reading fails, everyone waiting for it fails, and the next get reads again") {
    virtual {
      val reads = Reads(100.millis, fails = _ == 1)
      Snapshot.resource(reads.read, every = 2.seconds).use { snapshot =>
        for
          failed <- (snapshot.get.attempt, snapshot.get.attempt).parTupled
          again <- snapshot.get
          n <- reads.started.get
        yield
          assertEquals(failed._1.left.map(_.getMessage), Left("reading 1 failed"))
          assertEquals(failed._2.left.map(_.getMessage), Left("reading 1 failed"))
          assertEquals((again, n), (Snapshot.Taken(2, at(100.millis)), 2))
      }
    }
  }

  test("a waiter cancelled does not cancel the reading the others wait for") {
    virtual {
      val reads = Reads(100.millis)
      Snapshot.resource(reads.read, every = 2.seconds).use { snapshot =>
        for
          quitter <- snapshot.get.start
          stayer <- snapshot.get.start
          _ <- IO.sleep(50.millis)
          _ <- quitter.cancel
          got <- stayer.joinWithNever
          t <- IO.monotonic
          n <- reads.started.get
        yield assertEquals((got, t, n), (Snapshot.Taken(1, at(0.millis)), 100.millis, 1))
      }
    }
  }

  test("closing it cancels a reading under way and fails its waiters") {
    virtual {
      val reads = Reads(1.second)
      Snapshot.resource(reads.read, every = 2.seconds).allocated.flatMap { (snapshot, close) =>
        for
          waiter <- snapshot.get.attempt.start
          _ <- IO.sleep(50.millis)
          _ <- close
          got <- waiter.joinWithNever
          t <- IO.monotonic
        yield
          assertEquals(got.left.map(_.getMessage), Left("the console is closing"))
          assertEquals(t, 50.millis)
      }
    }
  }

  test("with `every` zero each get reads, and waits for it") {
    virtual {
      val reads = Reads(100.millis)
      Snapshot.resource(reads.read, every = Duration.Zero).use { snapshot =>
        for
          first <- snapshot.get
          second <- snapshot.get
          t <- IO.monotonic
        yield assertEquals(
          (first, second, t),
          (Snapshot.Taken(1, at(0.millis)), Snapshot.Taken(2, at(100.millis)), 200.millis)
        )
      }
    }
  }
