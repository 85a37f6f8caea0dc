package weir

import cats.effect.kernel.{Deferred, Fiber, Outcome as CeOutcome, Poll, Ref as KRef, Temporal}
import cats.effect.testkit.TestControl
import cats.effect.{IO, Ref}
import cats.syntax.all.*
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}

import java.util.concurrent.atomic.AtomicInteger
import scala.concurrent.duration.*

/** The token bucket in virtual time: every grant is checked against its exact due time. */
class RateLimiterSuite extends CatsEffectSuite with ScalaCheckSuite:

  private val now: IO[FiniteDuration] = IO.monotonic

  /** Acquires `n` times in one fiber, returning the virtual time of each grant. */
  private def grants(
      l: RateLimiter[IO],
      n: Int
  ): IO[Vector[FiniteDuration]] = (l.acquire *> now).replicateA(n).map(_.toVector)

  /** Starts `acquire` in a new fiber and returns once it is queued (so start order is queue order). */
  private def queued[A](l: RateLimiter[IO], after: IO[A]): IO[Fiber[IO, Throwable, A]] =
    l.waiting.flatMap(before => (l.acquire *> after).start <* (IO.cede *> l.waiting).iterateUntil(_ > before))

  test("a full bucket grants `burst` permits at once, then one every 1/rate exactly") {
    val run =
      for
        l <- RateLimiter.tokenBucket[IO](10, burst = 5)
        full <- l.available
        times <- grants(l, 12)
        empty <- l.available
      yield (full, times, empty)
    TestControl.executeEmbed(run).map { (full, times, empty) =>
      assertEquals(full, 5L)
      assertEquals(times, Vector.fill(5)(Duration.Zero) ++ (1 to 7).map(i => (i * 100).millis))
      assertEquals(empty, 0L)
    }
  }

  test("the bucket refills while idle, up to burst and no further") {
    val run =
      for
        l <- RateLimiter.tokenBucket[IO](10, burst = 5)
        _ <- grants(l, 5)
        _ <- IO.sleep(250.millis)
        partly <- l.available // 2.5 permits earned: 2 whole ones
        _ <- IO.sleep(10.seconds)
        full <- l.available
        t0 <- now
        times <- grants(l, 6)
      yield (partly, full, times.map(_ - t0))
    TestControl.executeEmbed(run).map { (partly, full, times) =>
      assertEquals(partly, 2L)
      assertEquals(full, 5L)
      assertEquals(times, Vector.fill(5)(Duration.Zero) :+ 100.millis)
    }
  }

  test("50,000 permits/s over 100,000 acquires ends at exactly (100,000 - burst) / rate") {
    val run = RateLimiter.tokenBucket[IO](50000, burst = 1).flatMap(l => l.acquire.replicateA_(100000)) *> now
    TestControl.executeEmbed(run).map(end => assertEquals(end, (99999L * 20000L).nanos)) // 1.99998 s
  }

  test("rates with no exact nanosecond interval do not drift: 3/s, 1000 per 3 s, 0.1/s") {
    val run =
      for
        three <- RateLimiter.tokenBucket[IO](3, burst = 1)
        a <- grants(three, 3001).map(_.last) // permit k (after the first) at ⌈k × 10^9 / 3⌉ ns
        b <- grants(three, 1).map(_.last - a)
        perThree <- RateLimiter.tokenBucket[IO](1000L, 3.seconds, burst = 1)
        t0 <- now
        c <- grants(perThree, 3001).map(_.last - t0)
        tenth <- RateLimiter.tokenBucket[IO](0.1, burst = 1)
        t1 <- now
        d <- grants(tenth, 4).map(_.last - t1)
      yield (a, b, c, d)
    TestControl.executeEmbed(run).map { (a, b, c, d) =>
      assertEquals(a, 1000.seconds)
      assertEquals(b, 333333334.nanos) // ⌈3001 × 10^9 / 3⌉ − 10^12
      assertEquals(c, 9.seconds)
      assertEquals(d, 30.seconds)
    }
  }

  test("consumers sharing one limiter get the total rate between them, not each") {
    val run =
      for
        l <- RateLimiter.tokenBucket[IO](100, burst = 10)
        both <- (grants(l, 500), grants(l, 500)).parTupled
      yield both
    TestControl.executeEmbed(run).map { (a, b) =>
      assertEquals((a ++ b).max, 9900.millis) // (1000 − 10) / 100 per second
      assertEquals((a ++ b).sorted.drop(10), (1 to 990).map(i => (i * 10).millis).toVector)
    }
  }

  test("waiters are granted first come, first served, and a small request never overtakes a large one") {
    val run =
      for
        l <- RateLimiter.tokenBucket[IO](1, burst = 3)
        _ <- l.acquireN(3)
        order <- Ref.of[IO, Vector[(Int, FiniteDuration)]](Vector.empty)
        big <- l.acquireN(3).flatMap(_ => now.flatMap(t => order.update(_ :+ (-1, t)))).start
        _ <- (IO.cede *> l.waiting).iterateUntil(_ == 1)
        small <- (0 until 5).toList.traverse(i => queued(l, now.flatMap(t => order.update(_ :+ (i, t)))))
        _ <- IO.sleep(1500.millis) // one permit in the bucket: the big request's, not the next caller's
        late <- queued(l, now.flatMap(t => order.update(_ :+ (5, t))))
        _ <- (big :: late :: small).traverse_(_.joinWithNever)
        got <- order.get
      yield got
    TestControl.executeEmbed(run).map { got =>
      assertEquals(got, ((-1, 3.seconds) +: (0 to 5).map(i => (i, (4 + i).seconds))).toVector)
    }
  }

  test("tryAcquire never waits and never overtakes a waiter") {
    val run =
      for
        l <- RateLimiter.tokenBucket[IO](1, burst = 2)
        a <- l.tryAcquireN(2)
        b <- l.tryAcquire
        w <- l.acquireN(2).start
        _ <- (IO.cede *> l.waiting).iterateUntil(_ == 1)
        _ <- IO.sleep(1500.millis) // one permit in the bucket, but the waiter is saving it up
        c <- l.tryAcquire
        _ <- w.joinWithNever
        _ <- IO.sleep(1.second)
        d <- l.tryAcquire
      yield List(a, b, c, d)
    TestControl.executeEmbed(run).assertEquals(List(true, false, false, true))
  }

  test("cancelling waiters, the sleeping head among them, loses no permit and keeps the others on time") {
    val run =
      for
        l <- RateLimiter.tokenBucket[IO](1, burst = 1)
        _ <- l.acquire
        ws <- (0 until 4).toList.traverse(_ => queued(l, now))
        _ <- IO.sleep(500.millis)
        _ <- ws(0).cancel // the head, sleeping for the queue
        _ <- ws(2).cancel // one in the middle
        b <- ws(1).joinWithNever
        d <- ws(3).joinWithNever
        probe <- grants(l, 1).map(_.last)
        left <- l.waiting
      yield (b, d, probe, left)
    TestControl.executeEmbed(run).assertEquals((1.second, 2.seconds, 3.seconds, 0))
  }

  test("cancelling the head hands the permits it was waiting for to the waiters behind it at once") {
    val run =
      for
        l <- RateLimiter.tokenBucket[IO](10, burst = 5)
        _ <- l.acquireN(5)
        head <- l.acquireN(5).start
        _ <- (IO.cede *> l.waiting).iterateUntil(_ == 1)
        small <- (0 until 4).toList.traverse(_ => queued(l, now))
        _ <- IO.sleep(350.millis) // 3.5 permits earned, none granted: the head needs 5
        _ <- head.cancel
        times <- small.traverse(_.joinWithNever)
      yield times
    TestControl.executeEmbed(run).assertEquals(List(350.millis, 350.millis, 350.millis, 400.millis))
  }

  test("a waiter cancelled just after its grant was decided: the permit is counted once, never lost") {
    // Either its `acquire` still returns (the permit is its own; cancellation is seen afterwards: what
    // Cats Effect's IO does, `held` = true) or its permit goes back into the bucket for those behind it.
    val run =
      for
        l <- RateLimiter.tokenBucket[IO](10, burst = 5)
        _ <- l.acquireN(5)
        head <- l.acquireN(5).start
        _ <- (IO.cede *> l.waiting).iterateUntil(_ == 1)
        victim <- Deferred[IO, Fiber[IO, Throwable, Unit]]
        held <- Ref.of[IO, Boolean](false)
        // the first small waiter becomes the head when `head` is cancelled and grants itself and the next
        // two in one go; then, before yielding, it cancels the second, which was granted but has not run
        first <- queued(l, victim.get.flatMap(_.cancel) *> now)
        second <- l.waiting.flatMap(before =>
          IO.uncancelable(poll => poll(l.acquire) *> held.set(true)).start <*
            (IO.cede *> l.waiting).iterateUntil(_ > before)
        )
        _ <- victim.complete(second)
        third <- queued(l, now)
        probe <- queued(l, now)
        _ <- IO.sleep(350.millis) // 3.5 permits earned: enough for the three small waiters
        _ <- head.cancel
        a <- first.joinWithNever
        _ <- second.join
        c <- third.joinWithNever
        p <- probe.joinWithNever
        next <- grants(l, 1).map(_.last)
        kept <- held.get
      yield (a, c, kept, p, next)
    TestControl.executeEmbed(run).map { (a, c, kept, p, next) =>
      assertEquals((a, c, p), (350.millis, 350.millis, 400.millis))
      assertEquals(next, if kept then 500.millis else 400.millis)
      assert(kept, "Cats Effect IO completes an acquire whose permit was granted before the cancel")
    }
  }

  test("waiters timing out at their due instants lose no permit") {
    // 10 waiters behind an empty bucket, each with a timeout at (or just after, or before) its due time,
    // then a probe: the queue is never empty, so the probe gets the permit after the last one anybody
    // kept — one permit per second, none lost whichever way each race at a due time goes
    val run =
      for
        l <- RateLimiter.tokenBucket[IO](1, burst = 1)
        _ <- l.acquire
        ws <- (0 until 10).toList.traverse { i =>
          val limit = List(1000L, 1000L, 500L, 1000L, 2000L)(i % 5).millis + (i / 2).seconds
          l.waiting.flatMap(before =>
            l.acquire.timeout(limit).attempt.start <* (IO.cede *> l.waiting).iterateUntil(_ > before)
          )
        }
        probe <- grants(l, 1).map(_.last)
        kept <- ws.traverse(_.joinWithNever).map(_.count(_.isRight))
      yield (kept, probe)
    TestControl.executeEmbed(run).map { (kept, probe) =>
      assert(kept > 0 && kept < 10, s"kept $kept")
      assertEquals(probe, (kept + 1).seconds)
    }
  }

  test("1000 concurrent waiters: the limiter arms at most one sleep at a time, one per grant") {
    val run =
      for
        counting <- IO(new CountingTemporal)
        l <- RateLimiter.tokenBucket[IO](1000, burst = 10)(using counting)
        all <- (0 until 1000).toList.parTraverse(_ => l.acquire *> now)
      yield (all.max, counting.sleeps.get, counting.maxAsleep.get)
    TestControl.executeEmbed(run).map { (end, sleeps, maxAsleep) =>
      assertEquals(end, 990.millis)
      assertEquals(maxAsleep, 1)
      assertEquals(sleeps, 990) // the head of the queue sleeps once per permit it waits for
    }
  }

  test("bad arguments are refused with the value in the message") {
    // building the effect throws nothing: running it fails, naming every bad value
    def refused(f: IO[RateLimiter[IO]]): IO[String] = f.intercept[InvalidSettings].map(_.getMessage)
    val rates = List(Double.NaN, Double.PositiveInfinity, Double.NegativeInfinity, 0.0, -1.5).traverse_ { r =>
      refused(RateLimiter.tokenBucket[IO](r, 1)).map(m =>
        assertEquals(m, s"invalid RateLimiter: rate must be finite and > 0 permits per second, was: $r")
      )
    }
    val others = List(
      refused(RateLimiter.tokenBucket[IO](10, 0)) -> "invalid RateLimiter: burst must be >= 1, was: 0",
      refused(RateLimiter.tokenBucket[IO](0L, 1.second, 1)) ->
        "invalid RateLimiter: permits per period must be > 0, was: 0",
      refused(RateLimiter.tokenBucket[IO](1L, Duration.Zero, 0)) ->
        "invalid RateLimiter: rate period must be > 0, was: 0 days; burst must be >= 1, was: 0"
    ).traverse_((io, expected) => io.map(assertEquals(_, expected)))
    val calls =
      for
        l <- RateLimiter.tokenBucket[IO](10, burst = 5)
        a <- l.acquireN(6).attempt
        b <- l.tryAcquireN(-1).attempt
        c <- l.acquireN(0).attempt
      yield (a.left.map(_.getMessage), b.left.map(_.getMessage), c)
    rates *> others *> calls.assertEquals(
      (
        Left("permits requested must be <= burst (5), was: 6"),
        Left("permits requested must be >= 0, was: -1"),
        Right(())
      )
    )
  }

  /** One caller of a random schedule: starts at `start`, asks for `n`, gives up after `patience` if set. */
  private final case class Call(start: FiniteDuration, n: Int, patience: Option[FiniteDuration])

  private val schedules: Gen[(Double, Int, List[Call])] =
    for
      rate <- Gen.oneOf(Gen.choose(1, 2000).map(_.toDouble), Gen.choose(0.5, 500.0))
      burst <- Gen.choose(1, 20)
      calls <- Gen.listOfN(
        60,
        for
          start <- Gen.choose(0L, 3000L).map(_.millis)
          n <- Gen.choose(1, burst)
          patience <- Gen.option(Gen.choose(1L, 500L).map(_.millis))
        yield Call(start, n, patience)
      )
    yield (rate, burst, calls)

  property(
    "permits granted in any window [s, t] never exceed burst + rate × (t - s); patient callers are served"
  ) {
    Prop.forAll(schedules) { (rate, burst, calls) =>
      val run =
        for
          l <- RateLimiter.tokenBucket[IO](rate, burst)
          got <- calls.parTraverse { c =>
            val ask = l.acquireN(c.n) *> now.map(t => (t, c.n))
            IO.sleep(c.start) *>
              c.patience.fold(ask.map(Option(_)))(p => ask.map(Option(_)).timeoutTo(p, IO.none))
          }
        yield got
      val got = TestControl.executeEmbed(run).unsafeRunSync()
      val granted = got.flatten.sortBy(_._1).toVector
      val perSecond = java.math.BigDecimal.valueOf(rate)
      def earned(span: FiniteDuration, mode: java.math.RoundingMode): Long =
        perSecond.multiply(java.math.BigDecimal.valueOf(span.toNanos, 9)).setScale(0, mode).longValueExact
      // from the start (a full bucket at 0): exactly burst + ⌊rate × t⌋
      var total = 0L
      for (t, n) <- granted do
        total += n
        val allowed = burst + earned(t, java.math.RoundingMode.FLOOR)
        assert(total <= allowed, s"$total permits by $t: > $allowed ($rate/s, burst $burst)")
      // every window starting at a grant (the worst ones start there), grants being due at whole
      // nanoseconds (rounded up), so a window between two grants can be up to 1 ns short: ⌈rate × span⌉
      for i <- granted.indices do
        var sum = 0L
        for j <- i until granted.size do
          sum += granted(j)._2
          val span = granted(j)._1 - granted(i)._1
          val allowed = burst + earned(span, java.math.RoundingMode.CEILING)
          assert(
            sum <= allowed,
            s"$sum permits in ${granted(i)._1}..${granted(j)._1}: > $allowed ($rate/s, $burst)"
          )
      assertEquals(got.count(_.isEmpty) + granted.size, calls.size)
      assertEquals(got.zip(calls).count((g, c) => g.isEmpty && c.patience.isEmpty), 0)
    }
  }

  /** IO's own `Temporal`, counting sleeps: how many were armed, and the most armed at the same time. */
  private final class CountingTemporal extends Temporal[IO]:
    private val io = Temporal[IO]
    val sleeps = new AtomicInteger
    val maxAsleep = new AtomicInteger
    private val asleep = new AtomicInteger

    def sleep(time: FiniteDuration): IO[Unit] =
      IO {
        sleeps.incrementAndGet()
        maxAsleep.accumulateAndGet(asleep.incrementAndGet(), math.max)
      }.bracket(_ => io.sleep(time))(_ => IO(asleep.decrementAndGet()).void)

    def monotonic: IO[FiniteDuration] = io.monotonic
    def realTime: IO[FiniteDuration] = io.realTime
    def ref[A](a: A): IO[KRef[IO, A]] = io.ref(a)
    def deferred[A]: IO[Deferred[IO, A]] = io.deferred[A]
    def start[A](fa: IO[A]): IO[Fiber[IO, Throwable, A]] = io.start(fa)
    def never[A]: IO[A] = io.never
    def cede: IO[Unit] = io.cede
    def unique: IO[cats.effect.kernel.Unique.Token] = io.unique
    override def racePair[A, B](fa: IO[A], fb: IO[B]): IO[Either[
      (CeOutcome[IO, Throwable, A], Fiber[IO, Throwable, B]),
      (Fiber[IO, Throwable, A], CeOutcome[IO, Throwable, B])
    ]] = io.racePair(fa, fb)
    def forceR[A, B](fa: IO[A])(fb: IO[B]): IO[B] = io.forceR(fa)(fb)
    def uncancelable[A](body: Poll[IO] => IO[A]): IO[A] = io.uncancelable(body)
    def canceled: IO[Unit] = io.canceled
    def onCancel[A](fa: IO[A], fin: IO[Unit]): IO[A] = io.onCancel(fa, fin)
    def pure[A](x: A): IO[A] = io.pure(x)
    def raiseError[A](e: Throwable): IO[A] = io.raiseError(e)
    def handleErrorWith[A](fa: IO[A])(f: Throwable => IO[A]): IO[A] = io.handleErrorWith(fa)(f)
    def flatMap[A, B](fa: IO[A])(f: A => IO[B]): IO[B] = io.flatMap(fa)(f)
    def tailRecM[A, B](a: A)(f: A => IO[Either[A, B]]): IO[B] = io.tailRecM(a)(f)
