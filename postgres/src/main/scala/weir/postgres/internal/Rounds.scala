package weir.postgres.internal

import cats.effect.kernel.Async
import cats.syntax.all.*
import doobie.*

/**
 * The loop of every prune (finished tasks and audit entries, on demand and by the workers' [[Pruner]]): a
 * batch per transaction, so that a large prune never holds many locks for long.
 */
private[postgres] object Rounds:

  /**
   * Runs `round`, a statement that deletes at most `batch` rows, each time in a transaction of its own,
   * until a round deletes fewer than `batch`; returns how many rows the rounds deleted. Cancelling it
   * cancels the round under way; the rounds before it stay committed.
   */
  def drain[F[_]](run: Run[F], batch: Int)(round: ConnectionIO[Int])(using F: Async[F]): F[Long] =
    def loop(total: Long): F[Long] =
      run(round).flatMap(n => if n < batch then F.pure(total + n) else loop(total + n))
    loop(0L)
