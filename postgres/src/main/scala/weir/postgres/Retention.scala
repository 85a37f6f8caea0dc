package weir.postgres

import weir.Validation

import scala.concurrent.duration.*

/**
 * How long finished tasks are kept in the `finished` table, the operators' actions in the audit log
 * (`audit`), and the batches that have ended (`batches`, counted from their end, and kept while their
 * callback has not finished: see [[Batches]]), before a worker prunes them (every worker prunes once a
 * minute, in batches of rows). `Retention.forever` keeps everything (prune with [[TaskAdmin.prune]],
 * [[AuditLog.prune]] and [[Batches.prune]]).
 * Negative durations throw nothing here: the worker that uses them fails to start, naming them ([[errors]]).
 */
final case class Retention(
    completed: FiniteDuration = 1.day,
    dead: FiniteDuration = 30.days,
    cancelled: FiniteDuration = 7.days,
    audit: FiniteDuration = 90.days,
    batches: FiniteDuration = 7.days
):

  /** What is wrong with these durations, each named; empty when they are valid. */
  def errors: List[String] =
    Validation.check(completed >= Duration.Zero, s"completed retention must be >= 0, was: $completed") ++
      Validation.check(dead >= Duration.Zero, s"dead retention must be >= 0, was: $dead") ++
      Validation.check(cancelled >= Duration.Zero, s"cancelled retention must be >= 0, was: $cancelled") ++
      Validation.check(audit >= Duration.Zero, s"audit retention must be >= 0, was: $audit") ++
      Validation.check(batches >= Duration.Zero, s"batches retention must be >= 0, was: $batches")

  private[postgres] def byState: Vector[(FinishedState, FiniteDuration)] =
    Vector(
      FinishedState.Completed -> completed,
      FinishedState.Dead -> dead,
      FinishedState.Cancelled -> cancelled
    )

object Retention:
  /** Nothing is pruned by the workers. */
  val forever: Option[Retention] = None
