package weir.postgres

import cats.effect.kernel.Async
import cats.syntax.all.*
import weir.Validation
import weir.postgres.internal.{AdminSql, Rounds}

import scala.concurrent.duration.*

/**
 * The operator's entry to a schema, by concern: [[queues]], the queues' controls (pause, resume, limits);
 * [[tasks]], the actions on tasks (cancel, retry, discard, one or a selection); [[overview]], what the
 * schema holds (counts, depths, queues, workers, schedules); and [[prune]], the deletion of old finished
 * tasks. Every call is one short transaction (a prune is one per batch), so none holds locks for long.
 *
 * ==The audit log==
 * Each action of [[queues]] and [[tasks]] (pause, resume, the limits, retry, cancel, discard; one entry per
 * task of a `…Many` call) is recorded in the schema's `audit` table in the action's own transaction, with
 * [[operator]], its time, its target and its outcome ([[AuditEntry]]): an entry exists if and only if the
 * action committed, and an action that did not apply (a retry of a completed task) is recorded as refused.
 * A call that fails (an unknown queue, a bad argument) records nothing. `TaskAdmin(db)` records its actions
 * as [[Operator.code]]; name whoever acts with `TaskAdmin(db, operator)` or [[as]], which both parts
 * follow. Read the log with [[AuditLog]]; workers prune it after [[Retention.audit]].
 */
final class TaskAdmin[F[_]] private (db: Database[F], val operator: Operator)(using F: Async[F]):

  private val sql = new AdminSql(db.schema)

  /** This admin, recording its actions as `operator`'s. */
  def as(operator: Operator): TaskAdmin[F] = new TaskAdmin(db, operator)

  /** The queues' controls, changed as [[operator]]. */
  val queues: QueueControls[F] = new QueueControls(db, operator)

  /** The actions on tasks, taken as [[operator]]. */
  val tasks: TaskActions[F] = new TaskActions(db, operator)

  /** What the schema holds: counts, depths, queues, workers, schedules. */
  val overview: Overview[F] = new Overview(db, sql)

  /**
   * Deletes finished tasks in `states` that finished more than `olderThan` ago, `batch` rows per
   * transaction (skipping rows another prune holds), and returns how many were deleted; workers do it after
   * their [[Retention]]. Not an operator's action, so not recorded. Fails with [[weir.InvalidSettings]]
   * naming every bad argument (a negative `olderThan`, a `batch` below 1, no `states`), deleting nothing.
   */
  def prune(
      olderThan: FiniteDuration,
      states: Set[FinishedState] = FinishedState.values.toSet,
      batch: Int = 1000
  ): F[Long] =
    val errors =
      Validation.check(olderThan >= Duration.Zero, s"olderThan must be >= 0, was: $olderThan") ++
        Validation.check(batch > 0, s"batch must be > 0, was: $batch") ++
        Validation.check(states.nonEmpty, "states must not be empty, was: none")
    Validation.raise("TaskAdmin.prune", errors) *>
      Rounds.drain(db.run, batch)(sql.prune(olderThan.toMillis, states.toArray.map(_.name), batch))

object TaskAdmin:

  /** The admin of `db`'s schema, recording its actions as `operator`'s. */
  def apply[F[_]: Async](db: Database[F], operator: Operator = Operator.code): TaskAdmin[F] =
    new TaskAdmin(db, operator)
