package weir.postgres.internal

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import munit.CatsEffectSuite

import java.sql.SQLException

class DeadlocksSuite extends CatsEffectSuite:

  private def failing(state: String) = new RuntimeException("wrapped", new SQLException("boom", state))

  /** An action failing with `error` its first `failures` runs, then answering its run's number. */
  private def action(failures: Int, error: Throwable): IO[(Ref[IO, Int], IO[Int])] =
    Ref.of[IO, Int](0).map(runs =>
      (
        runs,
        runs.updateAndGet(_ + 1).flatMap(n => if n <= failures then IO.raiseError(error) else IO.pure(n))
      )
    )

  test("a deadlock is run again until the action succeeds, with a pause before each next run") {
    TestControl.executeEmbed(
      for
        pair <- action(failures = 2, failing("40P01"))
        answer <- Deadlocks.retried(pair._2)
        n <- pair._1.get
      yield (answer, n)
    ).map((answer, n) => assertEquals((answer, n), (3, 3)))
  }

  test("a deadlock on every run fails the call after Attempts runs, with the server's error") {
    TestControl.executeEmbed(
      for
        pair <- action(failures = 100, failing("40P01"))
        result <- Deadlocks.retried(pair._2).attempt
        n <- pair._1.get
      yield (result, n)
    ).map { (result, n) =>
      assertEquals(n, Deadlocks.Attempts)
      assert(result.left.exists(Deadlocks.isDeadlock), result.toString)
    }
  }

  test("any other error fails at once: a unique violation is not run again") {
    TestControl.executeEmbed(
      for
        pair <- action(failures = 1, failing("23505"))
        result <- Deadlocks.retried(pair._2).attempt
        n <- pair._1.get
      yield (result.isLeft, n)
    ).map(r => assertEquals(r, (true, 1)))
  }
