package weir.postgres

import cats.effect.kernel.Async
import cats.syntax.all.*
import doobie.*
import weir.Validation
import weir.postgres.internal.{ActionSql, Deadlocks, WorkflowSql}

/**
 * What an operator does to a workflow, for one schema: [[cancel]] its unfinished tasks. Read a workflow with
 * [[TaskBrowser.workflow]]; a batch's cancel is [[Batches.cancel]].
 *
 * Concurrent callers are allowed, on one workflow as on several.
 */
final class Workflows[F[_]] private (db: Database[F], val operator: Operator)(using F: Async[F]):

  private val sql = new WorkflowSql(db.schema)
  private val actions = new ActionSql(db.schema)

  /** These workflows, their cancels recorded as `operator`'s. */
  def as(operator: Operator): Workflows[F] = new Workflows(db, operator)

  /**
   * Cancels each task of `workflow` that has not ended, for `reason`, in one transaction, as
   * [[TaskActions.cancel]] does, recorded in the audit log as [[operator]]'s, one entry per task: a task
   * waiting to run (for its parents too) ends cancelled at once, a running one is interrupted by its worker
   * and ends cancelled (or completed, if it completes first). The tasks are read, then locked in id order
   * by the cancel; a task enqueued into the workflow after the read is left as it is: cancel again to cancel
   * what is left. What the cancels did.
   *
   * Blocks: the cancel locks the workflow's unfinished tasks until it commits; a worker finishing one of
   * them waits for it. One the server aborts as a deadlock with a worker's statements is run again, up to a
   * few times, as [[TaskActions]]' are. Cancelling the call before its commit reaches the server cancels
   * nothing. Errors: [[weir.InvalidSettings]] for an empty `reason` or a bad [[operator]], [[UnknownWorkflow]]
   * when no task names the workflow; nothing is changed or recorded then.
   */
  def cancel(workflow: WorkflowId, reason: String = defaultReason): F[GroupCancel] =
    val run = sql.exists(workflow).flatMap { known =>
      if !known then FC.raiseError[Vector[Cancel]](new UnknownWorkflow(workflow, db.schema))
      else
        sql.unfinished(workflow).flatMap(ids =>
          if ids.isEmpty then FC.pure(Vector.empty[Cancel]) else actions.cancel(ids, reason, operator)
        )
    }
    Validation.raise(
      "Workflows.cancel",
      Validation.check(
        reason != null && reason.nonEmpty,
        s"a cancel's reason must not be empty, was: '$reason'"
      )
    ) *> Validation.raise("Operator", operator.errors) *>
      Deadlocks.retried(
        s"${operator.name}'s cancel of $workflow",
        db.actionFaults
      )(db.run(run)).map(GroupCancel.of)

  /** The reason of a cancel that gives none: who asked for it. */
  private def defaultReason: String =
    if operator == Operator.code then "workflow cancelled by an operator"
    else s"workflow cancelled by ${operator.name}"

  override def toString: String = s"Workflows(${db.schema})"

object Workflows:

  /** The workflows of `db`'s schema, their cancels recorded as `operator`'s. */
  def apply[F[_]: Async](db: Database[F], operator: Operator = Operator.code): Workflows[F] =
    new Workflows(db, operator)
