package weir.postgres

import weir.Validation

import scala.concurrent.duration.*

/**
 * How long finished tasks are kept in the `finished` table, and the operators' actions in the audit log
 * (`audit`), before a worker prunes them (every worker prunes once a minute, in batches).
 * `Retention.forever` keeps everything (prune with [[TaskAdmin.prune]] and [[AuditLog.prune]]).
 * Negative durations throw nothing here: the worker that uses them fails to start, naming them ([[errors]]).
 */
final case class Retention(
    completed: FiniteDuration = 1.day,
    dead: FiniteDuration = 30.days,
    cancelled: FiniteDuration = 7.days,
    audit: FiniteDuration = 90.days
):

  /** What is wrong with these durations, each named; empty when they are valid. */
  def errors: List[String] =
    Validation.check(completed >= Duration.Zero, s"completed retention must be >= 0, was: $completed") ++
      Validation.check(dead >= Duration.Zero, s"dead retention must be >= 0, was: $dead") ++
      Validation.check(cancelled >= Duration.Zero, s"cancelled retention must be >= 0, was: $cancelled") ++
      Validation.check(audit >= Duration.Zero, s"audit retention must be >= 0, was: $audit")

  private[postgres] def byState: Vector[(FinishedState, FiniteDuration)] =
    Vector(
      FinishedState.Completed -> completed,
      FinishedState.Dead -> dead,
      FinishedState.Cancelled -> cancelled
    )

object Retention:
  /** Nothing is pruned by the workers. */
  val forever: Option[Retention] = None
