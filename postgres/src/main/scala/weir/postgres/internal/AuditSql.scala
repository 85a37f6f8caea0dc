package weir.postgres.internal

import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.postgres.{AuditAction, AuditEntry, AuditFilter, AuditOutcome, Operator, Schema}

import java.time.Instant

/** The statements of the audit log (`audit`), for one schema. */
private[postgres] final class AuditSql(schema: Schema):

  private val audit = schema("audit")
  private def const(s: String): Fragment = Fragment.const0(s)

  /** One entry, in the caller's transaction, at its time. */
  def record(
      by: Operator,
      action: AuditAction,
      queue: Option[String],
      task: Option[Long],
      outcome: AuditOutcome,
      detail: Option[String]
  ): ConnectionIO[Int] =
    (const(s"INSERT INTO $audit (operator, session, action, queue, task, outcome, detail) VALUES (") ++
      fr0"${by.name}, ${by.session}, ${action.name}, $queue, $task, ${outcome.name}, $detail)").update.run

  /**
   * The entries `filter` selects, newest first, at most `limit`: a range of the primary key, or of the
   * index of the first of operator, queue and task that the filter names.
   */
  def list(filter: AuditFilter, limit: Int): ConnectionIO[Vector[AuditEntry]] =
    val conditions = Vector(
      filter.operator.map(o => fr0"operator = $o"),
      filter.queue.map(q => fr0"queue = $q"),
      filter.task.map(t => fr0"task = $t"),
      filter.before.map(b => fr0"id < $b")
    ).flatten
    val where = if conditions.isEmpty then Fragment.empty
    else const(" WHERE ") ++ conditions.reduce(_ ++ const(" AND ") ++ _)
    (const(s"SELECT id, at, operator, session, action, queue, task, outcome, detail FROM $audit") ++ where ++
      fr0" ORDER BY id DESC LIMIT $limit")
      .query[(
          Long,
          Instant,
          String,
          Option[String],
          String,
          Option[String],
          Option[Long],
          String,
          Option[String]
      )]
      .to[Vector]
      .flatMap(_.traverse { (id, at, name, session, action, queue, task, outcome, detail) =>
        (AuditAction.parse(action), AuditOutcome.parse(outcome)).tupled match
          case Some((a, o)) => FC.pure(AuditEntry(id, at, Operator(name, session), a, queue, task, o, detail))
          case None =>
            FC.raiseError(new IllegalStateException(
              s"audit entry $id has an unknown action '$action' or outcome '$outcome'"
            ))
      })

  /** Deletes up to `batch` entries older than `olderThanMillis`, skipping rows another prune holds. */
  def prune(olderThanMillis: Long, batch: Int): ConnectionIO[Int] =
    (const(s"DELETE FROM $audit WHERE id = ANY(ARRAY(SELECT id FROM $audit WHERE at < now() - ") ++
      fr0"$olderThanMillis" ++ const(" * interval '1 millisecond' LIMIT ") ++ fr0"$batch" ++
      const(" FOR UPDATE SKIP LOCKED))")).update.run
