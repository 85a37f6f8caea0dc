package weir

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import munit.CatsEffectSuite

import scala.concurrent.duration.*

class StreakSuite extends CatsEffectSuite:

  /** A streak whose beginnings and ends are written down, in order. */
  private def recorded: IO[(Streak[IO], Ref[IO, Vector[String]])] =
    Ref.of[IO, Vector[String]](Vector.empty).flatMap(told =>
      Streak[IO](
        began = e => told.update(_ :+ s"began: ${e.getMessage}"),
        ended = end => told.update(_ :+ s"ended: ${end.errors} errors over ${end.lasted.toMillis} ms")
      ).map(_ -> told)
    )

  private def boom(n: Int) = new RuntimeException(s"boom $n")

  test("a streak is told once when it begins, with its first error, and once when it ends, with its count") {
    TestControl.executeEmbed(
      for
        r <- recorded
        (streak, told) = r
        _ <- streak.failed(boom(1))
        _ <- (1 to 4).toList.traverse_(i => IO.sleep(1.second) *> streak.failed(boom(i + 1)))
        during <- told.get
        counted <- streak.errors
        _ <- IO.sleep(500.millis) *> streak.succeeded
        _ <- streak.succeeded
        after <- told.get
      yield
        assertEquals(during, Vector("began: boom 1"))
        assertEquals(counted, 5L)
        assertEquals(after, Vector("began: boom 1", "ended: 5 errors over 4500 ms"))
    )
  }

  test("successes outside a streak tell nothing") {
    for
      r <- recorded
      (streak, told) = r
      _ <- streak.succeeded.replicateA_(3)
      seen <- told.get
      counted <- streak.errors
    yield
      assertEquals(seen, Vector.empty)
      assertEquals(counted, 0L)
  }

  test("each streak is told: a failure after the end begins a new one") {
    TestControl.executeEmbed(
      for
        r <- recorded
        (streak, told) = r
        _ <- streak.failed(boom(1)) *> streak.failed(boom(2)) *> IO.sleep(1.second) *> streak.succeeded
        _ <- streak.failed(boom(3)) *> IO.sleep(2.seconds) *> streak.succeeded
        seen <- told.get
      yield assertEquals(
        seen,
        Vector(
          "began: boom 1",
          "ended: 2 errors over 1000 ms",
          "began: boom 3",
          "ended: 1 errors over 2000 ms"
        )
      )
    )
  }

  test("of concurrent failures exactly one begins the streak, and the streak counts them all") {
    for
      r <- recorded
      (streak, told) = r
      _ <- (1 to 200).toList.parTraverse_(i => streak.failed(boom(i)))
      during <- told.get
      _ <- List.fill(20)(streak.succeeded).parSequence_
      after <- told.get
    yield
      assertEquals(during.size, 1)
      assert(during.head.startsWith("began: boom "), during)
      assertEquals(after.size, 2)
      assert(after(1).startsWith("ended: 200 errors over "), after)
  }
