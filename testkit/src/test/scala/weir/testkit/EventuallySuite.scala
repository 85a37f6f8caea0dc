package weir.testkit

import cats.effect.testkit.TestControl
import cats.effect.{IO, Ref}
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}

import scala.concurrent.duration.*

/** The wait's timing, in virtual time: when it probes, when it returns, when and how it fails. */
class EventuallySuite extends CatsEffectSuite with ScalaCheckSuite:

  /** A probe answering the virtual time it ran at, in milliseconds, counting its runs. */
  private def clockProbe(runs: Ref[IO, Int]): IO[Long] = runs.update(_ + 1) *> IO.monotonic.map(_.toMillis)

  /** `io`'s value or error, and the virtual time it ended at. */
  private def timed[A](io: IO[A]): IO[(Either[Throwable, A], FiniteDuration)] =
    TestControl.executeEmbed(io.attempt.flatMap(r => IO.monotonic.map(r -> _)))

  test("the first probe runs at once: a condition already met returns at time zero, after one probe") {
    timed(Ref[IO].of(0).flatMap(runs => Eventually.until("now", clockProbe(runs))(_ => true) *> runs.get))
      .map((r, at) => assertEquals((r, at), (Right(1), Duration.Zero)))
  }

  test("probes every 50 ms: a condition met from 130 ms on is seen by the probe at 150 ms, the fourth") {
    timed(Ref[IO].of(0).flatMap { runs =>
      Eventually.until("130 ms", clockProbe(runs))(_ >= 130L).flatMap(v => runs.get.map(v -> _))
    }).map((r, at) => assertEquals((r, at), (Right((150L, 4)), 150.millis)))
  }

  test("a condition never met fails exactly at the deadline, naming what was awaited and the last value") {
    timed(Ref[IO].of(0).flatMap { runs =>
      Eventually.until("a miracle", clockProbe(runs), within = 1.second, every = 100.millis)(_ => false)
        .attempt.flatMap(r => runs.get.map(r -> _))
    }).map { (r, at) =>
      assertEquals(at, 1.second)
      val (result, runs) = r.fold(e => fail(s"the test itself failed: $e"), identity)
      // probes at 0, 100, ..., 900 ms; none at the deadline
      assertEquals(runs, 10)
      result match
        case Left(e: Eventually.TimedOut) =>
          assertEquals(e.getMessage, "timed out after 1 second waiting for a miracle; last value: 900")
          assertEquals((e.what, e.within, e.last), ("a miracle", 1.second, Some(900L)))
        case other => fail(s"expected TimedOut, was: $other")
    }
  }

  test("a probe still running at the deadline is cancelled there, and the failure says so") {
    // each probe takes 300 ms: they start at 0, 400 and 800 ms, and the third is cut at 1 s
    timed(Ref[IO].of(0).flatMap { runs =>
      val slow = IO.sleep(300.millis) *> clockProbe(runs)
      Eventually.until("a slow answer", slow, within = 1.second, every = 100.millis)(_ => false)
    }).map { (r, at) =>
      assertEquals(at, 1.second)
      assertEquals(
        r.left.map(_.getMessage),
        Left(
          "timed out after 1 second waiting for a slow answer; last value: 700 " +
            "(a probe was still running at the deadline)"
        )
      )
    }
  }

  test("no probe answering before the deadline says that no probe answered") {
    timed(Eventually.until("silence", IO.never[Int], within = 2.seconds)(_ => true)).map { (r, at) =>
      assertEquals(at, 2.seconds)
      assertEquals(
        r.left.map(_.getMessage),
        Left(
          "timed out after 2 seconds waiting for silence; no probe answered (a probe was still running at the deadline)"
        )
      )
    }
  }

  test("a failing probe fails the wait at once, with its own error") {
    val boom = new RuntimeException("boom")
    timed(Eventually.until("anything", IO.sleep(70.millis) *> IO.raiseError[Int](boom))(_ => true))
      .map((r, at) => assertEquals((r, at), (Left(boom), 70.millis)))
  }

  test("defined returns what the probe's Some holds, at the first probe that has it") {
    timed(Eventually.defined("a value", IO.monotonic.map(t => Option.when(t >= 120.millis)(t.toMillis))))
      .map((r, at) => assertEquals((r, at), (Right(150L), 150.millis)))
  }

  test("a long last value is cut in the message") {
    val e = new Eventually.TimedOut("x", 1.second, Some("a" * 5000), probeRunning = false)
    assert(e.getMessage.endsWith(s"${"a" * Eventually.TimedOut.shownChars}… (5000 characters)"), e.getMessage)
  }

  test("within and every must be > 0, and the error names the value") {
    for
      w <- Eventually.until("x", IO.unit, within = Duration.Zero)(_ => true).attempt
      e <- Eventually.until("x", IO.unit, every = -1.millis)(_ => true).attempt
    yield
      assertEquals(w.left.map(_.getMessage), Left("within must be > 0, was: 0 days"))
      assertEquals(e.left.map(_.getMessage), Left("every must be > 0, was: -1 milliseconds"))
  }

  test("cancelling the wait cancels the probe in progress") {
    TestControl.executeEmbed(
      for
        cancelled <- Ref[IO].of(false)
        probe = IO.never[Int].onCancel(cancelled.set(true))
        wait <- Eventually.until("never", probe)(_ => true).start
        _ <- IO.sleep(1.second) *> wait.cancel
        c <- cancelled.get
        now <- IO.monotonic
      yield assertEquals((c, now), (true, 1.second))
    )
  }

  property(
    "the wait ends at the first probe at or after the moment the condition holds, or at the deadline"
  ) {
    val cases =
      for
        every <- Gen.choose(1L, 500L)
        within <- Gen.choose(1L, 5000L)
        holdsFrom <- Gen.choose(0L, 6000L)
      yield (every.millis, within.millis, holdsFrom.millis)
    Prop.forAll(cases) { (every, within, holdsFrom) =>
      // probes at 0, every, 2 every, ... while before the deadline
      val firstSeen = every * math.ceil(holdsFrom.toNanos.toDouble / every.toNanos).toLong
      val expected: Either[FiniteDuration, FiniteDuration] =
        if firstSeen < within then Right(firstSeen) else Left(within)
      val (r, at) = timed(Eventually.until("t", IO.monotonic, within, every)(_ >= holdsFrom)).unsafeRunSync()
      assertEquals(r.left.map(_ => at), expected, s"every $every, within $within, holds from $holdsFrom")
      assertEquals(at, expected.merge)
    }
  }
