package weir.postgres.internal

import cats.effect.kernel.Async
import cats.syntax.all.*

import java.sql.SQLException
import java.util.concurrent.ThreadLocalRandom
import scala.concurrent.duration.*

/**
 * An operator's action that PostgreSQL aborted as a deadlock (SQLSTATE `40P01`), run again. An action locks
 * its tasks' rows in id order, but a worker's statements lock some of the same rows in another order (a
 * heartbeat by lease token, a batch of finishes and the batch counts its commit applies), and the server
 * breaks such a cycle by aborting one of the two transactions whole. The worker's side is run again by its
 * service; the action's is run again here, which does it once, as nothing of the aborted run was kept.
 * At most [[Attempts]] runs, a short random pause before each next one, so that the two do not meet again in
 * step; a deadlock on the last one fails the call with the server's error. Each run aborted and run again
 * is a fault ridden out: counted and logged once ([[ActionFaults]]).
 */
private[postgres] object Deadlocks:

  /** Runs of an action, the first included. */
  val Attempts = 5

  /**
   * `action`, run again when the server aborts it as a deadlock; each such run counted and logged by
   * `faults`, naming the action as `what` ("a cancel of 3 tasks").
   */
  def retried[F[_], A](what: => String, faults: ActionFaults[F])(action: F[A])(using F: Async[F]): F[A] =
    def attempt(n: Int): F[A] =
      action.recoverWith {
        case e if n < Attempts && isDeadlock(e) =>
          faults.deadlockRetried(what, n, e) *>
            F.delay(ThreadLocalRandom.current().nextLong(1, 10L << n)).flatMap(ms => F.sleep(ms.millis)) *>
            attempt(n + 1)
      }
    attempt(1)

  /** Whether `e`, or one of its causes, is the server's deadlock error. */
  def isDeadlock(e: Throwable): Boolean = serverError(e).isDefined

  /** The server's deadlock error among `e` and its causes. */
  def serverError(e: Throwable): Option[SQLException] =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(8).collectFirst {
      case s: SQLException if s.getSQLState == "40P01" => s
    }
