package weir.postgres

import cats.effect.kernel.Async
import cats.syntax.all.*
import doobie.*
import weir.{InvalidSettings, Validation}
import weir.postgres.internal.{
  ActionSql, AdminSql, BatchEnqueue, BatchSql, Deadlocks, GraphEnqueue, Graphs, Rounds
}

import scala.concurrent.duration.*

/**
 * Batches of tasks with a callback, for one schema: [[open]] a batch with its callback task, [[add]] tasks
 * to it (its members, of any queues of the schema), [[close]] it; once it is closed and every member has
 * ended, its callback becomes available, once, and reads what the members ended as with [[Job.batch]].
 * [[progress]] reads a batch at any time; [[cancel]] closes it and cancels its unfinished members.
 *
 * {{{
 * val batches = Batches(db)
 * for
 *   batch <- batches.open(reports, NewTask(Report("import 7")))
 *   _ <- batches.add(batch, imports, rows.map(r => NewTask(Import(r))))
 *   _ <- batches.close(batch) // the report runs once every import has ended
 * yield batch
 * }}}
 *
 * ==The callback==
 * [[open]] inserts the callback task at once, `waiting` (for its batch, as a dependent waits for a parent:
 * outside the claim, counted among its queue's waiting tasks), and [[BatchProgress.callback]] names it from
 * then on. It becomes available in the transaction that ends the batch: the close of a batch whose members
 * have all ended, or the end of the last member of a closed batch, whichever comes second; that transaction
 * wakes its queue. Exactly once, whatever ends the members (workers, rescues of killed workers, operators)
 * and however many end at once: every change of a batch takes its row's lock, and reads the row the one
 * before it left. A batch never closed never ends; a batch closed without members ends at its close.
 *
 * ==Members==
 * A member is a task enqueued into the batch ([[add]], [[addGraph]]) before its close, counted at its first
 * end by outcome: completed, dead or cancelled ([[BatchProgress]]). A task whose unique key is held inserts
 * nothing and is no member ([[Enqueued.Duplicate]]). Members may wait for other tasks ([[NewTask.after]],
 * [[TaskGraph]]); a member cancelled because a parent it needed ended dead or cancelled counts as cancelled.
 * An operator's retry of a dead or cancelled member puts it back to run outside the batch: its batch counted
 * its first end.
 *
 * ==Blocks==
 * Every change of a batch takes its row's lock until its transaction commits, and waits for the others on
 * it: an enqueue into the batch (when it counts its members, after inserting them), its close, and the ends
 * of its members, which a transaction applies at its commit, batch by batch in the order of their ids (so
 * that workers ending members of several batches never deadlock on them). Keep a transaction that enqueues
 * into a batch, or closes it, short after that call: the members' ends wait for it, and with them the
 * results a worker writes together, of any queue. A transaction of yours that changes two batches (adds to
 * one and ends a member of another, say) may be aborted by PostgreSQL as a deadlock: run it again.
 *
 * ==Errors==
 * Each checked before anything is written, but for a close racing an enqueue: [[weir.InvalidSettings]] for
 * bad tasks, callbacks and arguments, naming each bad value; [[UnknownBatch]] for an id the schema does not
 * hold; [[BatchClosed]] for an enqueue into a closed batch (also when the close commits between the check and
 * the enqueue's count: then the statement fails, and the transaction with it, so that a closed batch never
 * gains a member).
 *
 * ==Cancellation==
 * Cancelling a call that runs in a transaction of its own rolls it back, unless its commit has reached the
 * server, when it is done; a [[cancel]] cancelled between its two transactions leaves the batch closed with
 * its members as they were: cancel it again.
 *
 * Concurrent callers are allowed, on one batch as on several.
 */
final class Batches[F[_]] private (db: Database[F], val operator: Operator)(using F: Async[F]):

  private val sql = new BatchSql(db.schema)

  /** These batches, their cancels recorded as `operator`'s. */
  def as(operator: Operator): Batches[F] = new Batches(db, operator)

  /**
   * Opens a batch whose callback is `task` of `queue`, in a transaction of its own: its id. The callback is
   * stored at once, waiting for the batch (see above), and runs as any task of its queue once released: its
   * `delay` counts from now, and with an ordering key it holds back its key's later tasks while it waits.
   * Refused with [[weir.InvalidSettings]]: the task's own errors, a queue of another schema, a `uniqueKey`
   * (a held key would make another task the callback) or an `after` (a callback waits for its batch only).
   */
  def open[C](queue: TaskQueue[F, C], task: NewTask[C]): F[BatchId] = db.run(openIn(queue, task))

  /** [[open]] as part of the caller's transaction: the batch exists if and only if it commits. */
  def openIn[C](queue: TaskQueue[F, C], task: NewTask[C]): ConnectionIO[BatchId] =
    val errors = queue.nameErrors ++ schemaErrors(queue) ++ task.errors ++
      Validation.check(
        task.uniqueKey.isEmpty,
        s"a callback has no uniqueKey, was: '${task.uniqueKey.getOrElse("")}': a batch's callback is its own task"
      ) ++
      Validation.check(
        task.after.isEmpty,
        s"a callback waits for its batch only, was after: ${task.after.map(_.parent).mkString(", ")}"
      )
    raise("Batches.open", errors) *> sql.open(queue.name, queue.encoded(task)).map((id, _) => BatchId(id))

  /**
   * Enqueues `tasks` of `queue` into `batch` as its members, in one transaction of their own: each task's
   * [[Enqueued]], in the order of `tasks`. The tasks may wait for others ([[NewTask.after]]), as an
   * enqueue's may. Errors: the tasks' as [[TaskQueue.enqueueMany]] names them, a queue of another schema,
   * [[UnknownBatch]], [[BatchClosed]]; nothing is inserted then.
   */
  def add[A](batch: BatchId, queue: TaskQueue[F, A], tasks: Seq[NewTask[A]]): F[Vector[Enqueued]] =
    db.run(addIn(batch, queue, tasks))

  /** [[add]] as part of the caller's transaction: the members exist if and only if it commits. */
  def addIn[A](
      batch: BatchId,
      queue: TaskQueue[F, A],
      tasks: Seq[NewTask[A]]
  ): ConnectionIO[Vector[Enqueued]] =
    val errors = queue.nameErrors ++ schemaErrors(queue) ++
      tasks.iterator.zipWithIndex.flatMap((t, i) => Validation.nested(s"task $i", t.errors))
    val nodes = tasks.iterator.zipWithIndex.map((t, i) =>
      Graphs.Node(
        s"task $i",
        i.toString,
        queue.name,
        queue.schema,
        queue.encoded(t),
        Nil,
        t.after,
        Vector.empty
      )
    ).toVector
    raise("NewTask", errors) *>
      BatchEnqueue(
        sql,
        batch,
        GraphEnqueue(db.schema, nodes, "NewTask", oneWorkflow = false, Some(batch.value))
      )

  /**
   * Enqueues `graph` into `batch`, each of its tasks a member, in one transaction of their own: each handle's
   * [[Enqueued]]. Its tasks wait for each other as [[TaskGraph.enqueue]] says. Errors: the graph's, as
   * [[TaskGraph]] names them, [[UnknownBatch]], [[BatchClosed]]; nothing is inserted then.
   */
  def addGraph(batch: BatchId, graph: TaskGraph): F[Map[String, Enqueued]] = db.run(addGraphIn(batch, graph))

  /** [[addGraph]] as part of the caller's transaction. */
  def addGraphIn(batch: BatchId, graph: TaskGraph): ConnectionIO[Map[String, Enqueued]] =
    BatchEnqueue(
      sql,
      batch,
      GraphEnqueue(db.schema, graph.nodes, "TaskGraph", oneWorkflow = true, Some(batch.value))
    )
      .map(results => graph.handles.zip(results).toMap)

  /**
   * Closes `batch`, in a transaction of its own: no member can be added from now on, and once every member
   * has ended (at once, if they have all ended, or none was added) its callback is released. Closing a closed
   * batch changes nothing. The batch as it is once closed; [[UnknownBatch]] if the schema holds none.
   */
  def close(batch: BatchId): F[BatchProgress] = db.run(closeIn(batch))

  /**
   * [[close]] as part of the caller's transaction: a handler may close its own batch, or the batch it adds to,
   * in the transaction that completes it ([[Job.completeIn]]); the last member's end and the close then end
   * the batch together, at its commit. The answer counts the members' ends that committed before: those of
   * the caller's own transaction are applied at its commit.
   */
  def closeIn(batch: BatchId): ConnectionIO[BatchProgress] =
    sql.step(batch, added = 0L, close = true).flatMap(BatchEnqueue.found(db.schema, batch))

  /** `batch` as it stands now; `None` if the schema holds no such batch. */
  def progress(batch: BatchId): F[Option[BatchProgress]] = db.run.single(progressIn(batch))

  /**
   * [[progress]] as part of the caller's transaction, read in its snapshot (the members' ends of the caller's
   * own transaction are counted at its commit).
   */
  def progressIn(batch: BatchId): ConnectionIO[Option[BatchProgress]] = sql.progress(batch)

  /**
   * Cancels `batch` for `reason`: closes it (one transaction), then cancels each of its members that has not
   * ended (a second one) as [[TaskActions.cancel]] does, recorded in the audit log as [[operator]]'s, one
   * entry per member: a member waiting to run ends cancelled at once, a running one is interrupted by its
   * worker and ends cancelled (or completed, if it completes first). The callback is released once the last
   * of them has ended, and reads how each ended; cancel the callback too (`TaskActions.cancel` of
   * [[BatchProgress.callback]]) if it must not run. What the cancels did; cancelling again cancels what is
   * left. Errors: [[weir.InvalidSettings]] for an empty `reason` or a bad [[operator]], [[UnknownBatch]].
   */
  def cancel(batch: BatchId, reason: String = defaultReason): F[GroupCancel] =
    val actions = new ActionSql(db.schema)
    val cancelUnfinished = sql.unfinished(batch).flatMap(ids =>
      if ids.isEmpty then FC.pure(Vector.empty[Cancel]) else actions.cancel(ids, reason, operator)
    )
    Validation.raise(
      "Batches.cancel",
      Validation.check(
        reason != null && reason.nonEmpty,
        s"a cancel's reason must not be empty, was: '$reason'"
      )
    ) *> Validation.raise("Operator", operator.errors) *>
      Deadlocks.retried(s"${operator.name}'s close of $batch", db.actionFaults)(db.run(closeIn(batch))) *>
      Deadlocks.retried(s"${operator.name}'s cancel of $batch", db.actionFaults)(db.run(cancelUnfinished))
        .map(GroupCancel.of)

  /**
   * Deletes the batches that ended more than `olderThan` ago and whose callback has left `tasks` (it has
   * finished, or was cancelled), `batch` rows per transaction, skipping rows another prune holds; returns how
   * many. Workers do it after their [[Retention.batches]]. An open batch, or one not ended, is never pruned.
   * Fails with [[weir.InvalidSettings]] naming a negative `olderThan` or a `batch` below 1, deleting nothing.
   */
  def prune(olderThan: FiniteDuration, batch: Int = 1000): F[Long] =
    val admin = new AdminSql(db.schema)
    Validation.raise(
      "Batches.prune",
      Validation.check(olderThan >= Duration.Zero, s"olderThan must be >= 0, was: $olderThan") ++
        Validation.check(batch > 0, s"batch must be > 0, was: $batch")
    ) *> Rounds.drain(db.run, batch)(admin.pruneBatches(olderThan.toMillis, batch))

  /** The reason of a cancel that gives none: who asked for it. */
  private def defaultReason: String =
    if operator == Operator.code then "batch cancelled by an operator"
    else s"batch cancelled by ${operator.name}"

  private def schemaErrors(queue: TaskQueue[F, ?]): List[String] =
    Validation.check(
      queue.schema == db.schema,
      s"queue '${queue.name}' is of schema '${queue.schema}', not of schema '${db.schema}' of the batches: " +
        "a batch's tasks are of its schema"
    )

  private def raise(settings: String, errors: List[String]): ConnectionIO[Unit] =
    if errors.isEmpty then FC.unit else FC.raiseError(new InvalidSettings(settings, errors))

  override def toString: String = s"Batches(${db.schema})"

object Batches:

  /** The batches of `db`'s schema, their cancels recorded as `operator`'s. */
  def apply[F[_]: Async](db: Database[F], operator: Operator = Operator.code): Batches[F] =
    new Batches(db, operator)
