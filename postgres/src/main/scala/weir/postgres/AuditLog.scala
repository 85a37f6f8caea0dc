package weir.postgres

import cats.effect.kernel.Async
import cats.syntax.all.*
import weir.Validation
import weir.postgres.internal.{AuditSql, Rounds}

import scala.concurrent.duration.*

/**
 * The audit log of a schema: every action of a [[TaskAdmin]], recorded in the action's own transaction (see
 * "The audit log" there), read here newest first, and pruned. Each call is one short transaction (a prune,
 * one per batch).
 */
final class AuditLog[F[_]] private (db: Database[F])(using F: Async[F]):

  private val sql = new AuditSql(db.schema)

  /**
   * The entries `filter` selects, newest first, at most `limit` (1 to 1000): for the next page, pass the last
   * entry's id as `filter.before`. Each page is a range of one index (by id, or by operator, queue or task
   * and id), so a page deep in the log costs what the first costs. Fails with [[weir.InvalidSettings]] for a
   * `limit` out of range.
   */
  def entries(filter: AuditFilter = AuditFilter(), limit: Int = 50): F[Vector[AuditEntry]] =
    Validation.raise(
      "AuditLog.entries",
      Validation.check(limit > 0 && limit <= 1000, s"limit must be in 1..1000, was: $limit")
    ) *> db.run(sql.list(filter, limit))

  /**
   * Deletes the entries older than `olderThan`, `batch` rows per transaction (skipping rows another prune
   * holds), and returns how many were deleted; workers do it after [[Retention.audit]]. Fails with
   * [[weir.InvalidSettings]] naming every bad argument, deleting nothing.
   */
  def prune(olderThan: FiniteDuration, batch: Int = 1000): F[Long] =
    val errors =
      Validation.check(olderThan >= Duration.Zero, s"olderThan must be >= 0, was: $olderThan") ++
        Validation.check(batch > 0, s"batch must be > 0, was: $batch")
    Validation.raise("AuditLog.prune", errors) *>
      Rounds.drain(db.run, batch)(sql.prune(olderThan.toMillis, batch))

object AuditLog:
  def apply[F[_]: Async](db: Database[F]): AuditLog[F] = new AuditLog(db)
