package weir.postgres

import scala.concurrent.duration.*

/**
 * How long finished tasks are kept in the `finished` table before a worker prunes them (every worker
 * prunes once a minute, in batches). `Retention.forever` keeps everything (prune with [[TaskAdmin.prune]]).
 */
final case class Retention(
    completed: FiniteDuration = 1.day,
    dead: FiniteDuration = 30.days,
    cancelled: FiniteDuration = 7.days
):
  require(completed >= Duration.Zero, s"completed retention must be >= 0, was: $completed")
  require(dead >= Duration.Zero, s"dead retention must be >= 0, was: $dead")
  require(cancelled >= Duration.Zero, s"cancelled retention must be >= 0, was: $cancelled")

  private[postgres] def byState: Vector[(FinishedState, FiniteDuration)] =
    Vector(
      FinishedState.Completed -> completed,
      FinishedState.Dead -> dead,
      FinishedState.Cancelled -> cancelled
    )

object Retention:
  /** Nothing is pruned by the workers. */
  val forever: Option[Retention] = None
