package weir.postgres

import cats.effect.kernel.Async
import cats.syntax.all.*
import doobie.*
import weir.Validation
import weir.postgres.internal.{ActionSql, Deadlocks}

/**
 * What an operator does to tasks ([[TaskAdmin.tasks]]): cancel one (a running one through its worker),
 * retry or discard a dead or cancelled one, each of them for a selection too (the `…Many` forms), each
 * recorded in the audit log as [[operator]]'s, one entry per task (see [[TaskAdmin]]).
 *
 * ==Cost and atomicity==
 * A call is one statement, however many tasks it names: it locks their rows, acts and records the entries at
 * once, in one round trip (a call that names a task twice, one statement per run of distinct ids, in one
 * transaction). It commits whole, with its entries, or not at all. A call cancelled while its statement runs
 * may still be done, as the server commits a statement that reached it; its entries then say so. A bad
 * argument or [[Operator]] fails the call with [[weir.InvalidSettings]], changing and recording nothing.
 * Concurrent calls are allowed: each locks its tasks' rows in id order, so two calls that share tasks take
 * turns on them. A call the server aborts as a deadlock with a worker's statements (which lock some of the
 * same rows in another order) is run again, up to a few times ([[internal.Deadlocks]]).
 */
final class TaskActions[F[_]] private[postgres] (db: Database[F], val operator: Operator)(using F: Async[F]):

  private val sql = new ActionSql(db.schema)

  /**
   * Cancels the task `id`, for `reason` (kept among its errors, after `cancelled: `):
   *   - a task waiting to run moves to `finished` as cancelled at once ([[Cancel.Cancelled]]);
   *   - a running one is interrupted ([[Cancel.Requested]]): the request is stored on its row and its
   *     worker is told at commit, by a notification (or, if it misses it, by its next heartbeat, within
   *     half a [[WorkerConfig.heartbeat]]); the worker cancels the handler's fiber (its finalizers run) and
   *     the task moves to `finished` as cancelled. One whose worker is gone is cancelled by the rescue,
   *     and one that completes before its worker interrupts it stays completed;
   *   - a finished task is left as it is ([[Cancel.Finished]] says how it finished).
   * The task's row is locked for the call, so that no finish, claim or retry races it. Cancelling again a
   * task whose cancel is requested changes nothing but the stored reason. A worker of an earlier release
   * never hears of a request: its task runs to its end. Without a `reason`, the operator's name is given.
   */
  def cancel(id: Long, reason: String = defaultReason): F[Cancel] = cancelMany(Vector(id), reason).map(_.head)

  /** [[cancel]] of each of `ids`, in one transaction, in their order: each one's outcome. */
  def cancelMany(ids: Seq[Long], reason: String = defaultReason): F[Vector[Cancel]] =
    Validation.raise(
      "TaskActions.cancel",
      Validation.check(
        reason != null && reason.nonEmpty,
        s"a cancel's reason must not be empty, was: '$reason'"
      )
    ) *> Validation.raise("Operator", operator.errors) *>
      perform("cancel", ids)(sql.cancel(_, reason, operator))

  /** The reason of a cancel that gives none: who asked for it. */
  private def defaultReason: String =
    if operator == Operator.code then "requested by an operator" else s"requested by ${operator.name}"

  /**
   * Puts a dead or cancelled task back to run now, with a fresh set of attempts (its errors are kept):
   * [[Retry.Retried]]. A task in another state is left as it is ([[Retry.Refused]] says which), as is one
   * whose unique key an unfinished task of its queue holds ([[Retry.KeyHeld]]).
   */
  def retry(id: Long): F[Retry] = retryMany(Vector(id)).map(_.head)

  /** [[retry]] of each of `ids`, in one transaction, in their order: what each one did. */
  def retryMany(ids: Seq[Long]): F[Vector[Retry]] =
    Validation.raise("Operator", operator.errors) *> perform("retry", ids)(sql.retry(_, operator))

  /**
   * Deletes a dead or cancelled task for good: [[Discard.Discarded]]. A task in another state is left as it
   * is ([[Discard.Refused]] says which).
   */
  def discard(id: Long): F[Discard] = discardMany(Vector(id)).map(_.head)

  /** [[discard]] of each of `ids`, in one transaction, in their order: what each one did. */
  def discardMany(ids: Seq[Long]): F[Vector[Discard]] =
    Validation.raise("Operator", operator.errors) *> perform("discard", ids)(sql.discard(_, operator))

  /**
   * `statement` on `ids`: one statement per run of distinct ids ([[ActionSql.distinctRuns]]), each one
   * locking, acting and recording at once. One statement runs in autocommit, committed in the same round
   * trip; several share one transaction.
   */
  private def perform[A](action: String, ids: Seq[Long])(
      statement: Vector[Long] => ConnectionIO[Vector[A]]
  ): F[Vector[A]] =
    // named only when a deadlock is logged
    def what = s"${operator.name}'s $action of ${ids.size} task${if ids.size == 1 then "" else "s"}"
    ActionSql.distinctRuns(ids.toVector) match
      case Vector() => F.pure(Vector.empty)
      case Vector(run) => Deadlocks.retried(what, db.actionFaults)(db.run.single(statement(run)))
      case runs => Deadlocks.retried(what, db.actionFaults)(db.run(runs.flatTraverse(statement)))
