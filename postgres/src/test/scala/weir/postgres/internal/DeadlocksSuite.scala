package weir.postgres.internal

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import munit.CatsEffectSuite
import weir.testing.RecordedLogs

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

  /** Faults counted and logged into a record of their own, with the record to read. */
  private def faults: IO[(ActionFaults[IO], RecordedLogs)] =
    RecordedLogs().map(logs => (new ActionFaults[IO](logs.getLoggerFromName(ActionFaults.loggerName)), logs))

  test("a deadlock is run again until the action succeeds: each aborted run counted and logged once") {
    TestControl.executeEmbed(
      for
        recorded <- faults
        (f, logs) = recorded
        pair <- action(failures = 2, failing("40P01"))
        answer <- Deadlocks.retried("ada's cancel of 3 tasks", f)(pair._2)
        n <- pair._1.get
        count <- f.deadlocksRetried
        lines <- logs.lines
      yield (answer, n, count, lines)
    ).map { (answer, n, count, lines) =>
      assertEquals((answer, n, count), (3, 3, 2L))
      assertEquals(lines.map(l => (l.logger, l.level)), Vector.fill(2)(("weir.postgres.actions", "WARN")))
      assertEquals(
        lines.map(_.message),
        Vector(1, 2).map(run =>
          s"ada's cancel of 3 tasks was aborted by the server as a deadlock (run $run of 5) and is run again: boom"
        )
      )
    }
  }

  test("a deadlock on every run fails the call after Attempts runs, with the server's error") {
    TestControl.executeEmbed(
      for
        recorded <- faults
        f = recorded._1
        pair <- action(failures = 100, failing("40P01"))
        result <- Deadlocks.retried("a cancel", f)(pair._2).attempt
        n <- pair._1.get
        count <- f.deadlocksRetried
      yield (result, n, count)
    ).map { (result, n, count) =>
      assertEquals(n, Deadlocks.Attempts)
      // the last run's deadlock is the caller's error, not a fault ridden out
      assertEquals(count, Deadlocks.Attempts - 1L)
      assert(result.left.exists(Deadlocks.isDeadlock), result.toString)
    }
  }

  test("any other error fails at once: a unique violation is not run again") {
    TestControl.executeEmbed(
      for
        recorded <- faults
        (f, logs) = recorded
        pair <- action(failures = 1, failing("23505"))
        result <- Deadlocks.retried("a cancel", f)(pair._2).attempt
        n <- pair._1.get
        count <- f.deadlocksRetried
        lines <- logs.lines
      yield (result.isLeft, n, count, lines.size)
    ).map(r => assertEquals(r, (true, 1, 0L, 0)))
  }
