package weir.postgres

import cats.effect.kernel.Async
import cats.syntax.all.*
import doobie.*
import weir.Validation
import weir.postgres.internal.{AuditSql, KeysSql, TaskDetailSql, TaskListSql, WorkflowSql}

/**
 * The tasks of a schema as an admin page reads them (the console's task list, a task's page, its keys, a
 * workflow's and a batch's pages): live and finished alike, each in its [[TaskState]]. Every call is one short read-only transaction whose
 * cost is bounded by a limit or an index range, however long the history grows: the task list pages by
 * keyset, never by `OFFSET`. Acting on tasks is [[TaskAdmin]]'s; their audit log is [[AuditLog]]'s. The
 * transactions are weir's own (see [[Database.transactor]] for yours): each runs on a thread of weir's JDBC
 * pool from its first statement to its commit.
 *
 * {{{
 * val browser = TaskBrowser(db)
 * for
 *   page <- browser.tasks(TaskQuery(queue = Some("emails"), state = Some(TaskState.Dead)), size = 20)
 *   next <- page.next.traverse(c => browser.tasks(TaskQuery(queue = Some("emails"), state = Some(TaskState.Dead), after = Some(c))))
 * yield page.rows ++ next.toVector.flatMap(_.rows)
 * }}}
 *
 * ==Reading==
 * Each call reads committed rows and writes nothing; concurrent callers are allowed. A page is read in one
 * transaction, but the pages of a walk are read at different moments: a task that moves meanwhile (from
 * `tasks` to `finished`, or from one state to another) may show on two pages or on none, and one that is
 * enqueued after the position a walk has passed is not shown. Cancelling a call cancels its transaction.
 *
 * ==Errors==
 * An argument out of range fails the call with [[weir.InvalidSettings]] naming every bad value, before any
 * read; a database error fails it with the driver's `SQLException`.
 */
final class TaskBrowser[F[_]] private (db: Database[F])(using F: Async[F]):

  private val list = new TaskListSql(db.schema)
  private val detail = new TaskDetailSql(db.schema)
  private val keyed = new KeysSql(db.schema)
  private val audit = new AuditSql(db.schema)
  private val flows = new WorkflowSql(db.schema)

  /**
   * A page of at most `size` (1 to 1000) tasks that `query` selects, in its order, strictly after
   * `query.after`; the next page starts at the page's [[TaskPage.next]]. Each page reads the indexes in the
   * list's order: the primary keys in enqueue order; `finished_prune`, or `finished_by_state` per state and
   * queue, by finish time; a time range of finished tasks through `finished_created` when it is narrow.
   * What no index answers (for live tasks every filter; for finished ones a key, a priority, payload text,
   * and in enqueue order a state or a queue) is checked on at most `scan` (1 to 1,000,000) tasks, the first
   * ones after the position in the list's order. When those hold too few matches to fill the page, the
   * page ends where that scan stopped and says so ([[TaskPage.scannedTo]]), and its `next` goes on from
   * there: a rare match costs more pages, never a slow one. Fails with [[weir.InvalidSettings]] for a bad
   * `size`, `scan` or query ([[TaskQuery.errors]]).
   */
  def tasks(query: TaskQuery = TaskQuery(), size: Int = 50, scan: Int = 5000): F[TaskPage] =
    Validation.raise(
      "TaskBrowser.tasks",
      Validation.check(size > 0 && size <= 1000, s"size must be in 1..1000, was: $size") ++
        Validation.check(scan > 0 && scan <= 1000000, s"scan must be in 1..1000000, was: $scan") ++
        query.errors
    ) *> db.run(list.page(query, size, scan))

  /** The task `id`, live or finished, with its headers and errors; `None` when there is none. */
  def task(id: Long): F[Option[TaskDetail]] = db.run.single(detail.task(id))

  /**
   * The task `id` as its page shows it, in one transaction: the task ([[task]]), up to `neighbours` (1 to
   * 1000) live tasks of its key either side of it ([[neighbours]]) and its newest `actions` (1 to 1000)
   * entries of the audit log ([[AuditLog.entries]] for `AuditFilter(task = Some(id))`); `None` when there
   * is no such task. Fails with [[weir.InvalidSettings]] naming every bad value.
   */
  def view(id: Long, neighbours: Int = 5, actions: Int = 20): F[Option[TaskView]] =
    Validation.raise(
      "TaskBrowser.view",
      Validation.check(
        neighbours > 0 && neighbours <= 1000,
        s"neighbours must be in 1..1000, was: $neighbours"
      ) ++
        Validation.check(actions > 0 && actions <= 1000, s"actions must be in 1..1000, was: $actions")
    ) *> db.run(detail.task(id).flatMap(_.traverse(t =>
      (around(t, neighbours), audit.list(AuditFilter(task = Some(id)), actions)).mapN(TaskView(t, _, _))
    )))

  /**
   * The live tasks of `task`'s ordering key in its queue around it: up to `n` (1 to 1000) that run before
   * it and `n` after it, in the order they run; [[KeyNeighbours.none]] for a task without a key, read
   * without a query. Fails with [[weir.InvalidSettings]] for a bad `n`.
   */
  def neighbours(task: TaskDetail, n: Int = 5): F[KeyNeighbours] =
    Validation.raise(
      "TaskBrowser.neighbours",
      Validation.check(n > 0 && n <= 1000, s"n must be in 1..1000, was: $n")
    ) *>
      task.key.fold(F.pure(KeyNeighbours.none))(_ => db.run(around(task, n)))

  private def around(task: TaskDetail, n: Int): ConnectionIO[KeyNeighbours] =
    task.key.fold(FC.pure(KeyNeighbours.none))(k => detail.neighbours(task.queue, k, task.id, n))

  /**
   * The ordering keys with live tasks, at most `limit` (1 to 1000): each one's backlog, counted up to `cap`
   * (1 to 1,000,000), and its head, the task that runs next; blocked keys first (a head that has failed, with
   * others waiting behind it), then the longest waiting heads. The heads are read from the claim's `head`
   * marks, `2 × limit` of them at most. Fails with [[weir.InvalidSettings]] naming every bad value.
   */
  def keys(limit: Int = 200, cap: Int = 1000): F[Vector[KeyBacklog]] =
    Validation.raise(
      "TaskBrowser.keys",
      Validation.check(limit > 0 && limit <= 1000, s"limit must be in 1..1000, was: $limit") ++
        Validation.check(cap > 0 && cap <= 1000000, s"cap must be in 1..1000000, was: $cap")
    ) *> db.run(keyed.keys(limit, cap))

  /**
   * The workflow `id` in one statement ([[WorkflowView]]): each state's count over all its tasks, and its
   * first `limit` (1 to 10,000) tasks by id, each with its parents and layer. The counts read every task's
   * row of the workflow (an index range per table); the list is bounded by `limit`. Fails with
   * [[weir.InvalidSettings]] for a bad `limit`, with [[UnknownWorkflow]] when no task names the workflow.
   */
  def workflow(id: WorkflowId, limit: Int = 1000): F[WorkflowView] =
    Validation.raise(
      "TaskBrowser.workflow",
      Validation.check(limit > 0 && limit <= 10000, s"limit must be in 1..10000, was: $limit")
    ) *> db.run.single(flows.view(id, limit)).flatMap(
      _.liftTo[F](new UnknownWorkflow(id, db.schema))
    )

  /**
   * The batch `id` in one statement ([[BatchView]]): its progress, its callback's state, and a page of at most
   * `limit` (1 to 10,000) members with ids above `after` (0: from the first), by id; the page's
   * [[BatchView.next]] starts the next one. Each table's members are read through its index on the batch, at
   * most `limit + 1` rows of each. Fails with [[weir.InvalidSettings]] for a bad `limit` or `after`, with
   * [[UnknownBatch]] when the schema holds no such batch.
   */
  def batch(id: BatchId, after: Long = 0L, limit: Int = 1000): F[BatchView] =
    Validation.raise(
      "TaskBrowser.batch",
      Validation.check(limit > 0 && limit <= 10000, s"limit must be in 1..10000, was: $limit") ++
        Validation.check(after >= 0, s"after must be >= 0, was: $after")
    ) *> db.run.single(flows.batch(id, after, limit)).flatMap(
      _.liftTo[F](new UnknownBatch(id, db.schema))
    )

object TaskBrowser:
  def apply[F[_]: Async](db: Database[F]): TaskBrowser[F] = new TaskBrowser(db)
