package weir.postgres.internal

import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.postgres.{AuditAction, Cancel, Discard, FinishedState, Operator, Retry, Schema, TaskState}

/**
 * The statements of [[weir.postgres.TaskActions]], for one schema: each action on a run of distinct task
 * ids is one statement that locks the tasks' rows, reads their state, acts, and inserts one audit entry per
 * id in the ids' order (their ids in that order too), so that the entries commit with the action or not at
 * all. The answers come back in the ids' order, read from the same outcomes as the entries.
 *
 * A statement reads one snapshot, and a row it waited for is locked in its newest version: a task that
 * left the table between the two (a worker finished it, another operator retried or discarded it) is
 * missing from the lock and from the snapshot's other table. Such a statement changes and records nothing
 * and is run again ([[untilWon]]), with a snapshot taken after that commit; each time follows a commit
 * that moved one of these rows.
 */
private[postgres] final class ActionSql(schema: Schema) extends SqlBase(schema):
  import ActionSql.*

  private val audit = schema("audit")

  /**
   * Cancels each of `ids` (distinct) for `reason`, under the lock of its live row: a task not yet running
   * (available, or waiting for its parents) moves to `finished` as cancelled (the next task of its key becomes
   * the head, and its own dependents are cancelled by the schema's trigger, naming it); a running one gets the request and
   * its worker is told at commit, on the cancel channel, by the claim's lease token, a space and the reason
   * (cut to fit a notification's payload; the row keeps it whole); a finished one is left as it is.
   */
  def cancel(ids: Vector[Long], reason: String, by: Operator): ConnectionIO[Vector[Cancel]] =
    val statement = start(ids) ++ locking(tasks, "x.id, x.queue, x.state::text AS state") ++
      const(
        s"""
    , done AS (SELECT f.id, f.queue, f.state::text AS state FROM $finished AS f WHERE f.id = ANY($picked))
    , c AS (
      DELETE FROM $tasks AS t
      WHERE t.id = ANY(ARRAY(SELECT id FROM locked WHERE state IN ('available', 'waiting'))) AND $won
      RETURNING t.*)
    , moved AS (
      INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts, ordering_key, unique_key, errors, created_at, headers)
      SELECT id, queue, payload, priority, 'cancelled', attempt, max_attempts, ordering_key, unique_key,
             errors || jsonb_build_array(jsonb_build_object('attempt', attempt, 'at', now(), 'error', 'cancelled: ' || """
      ) ++
      fr0"$reason" ++ const("""::text)), created_at, headers FROM c)""") ++ nextHeads("c") ++ const(s"""
    , r AS (
      UPDATE $tasks AS t SET cancel_requested = """) ++ fr0"$reason" ++
      const(s"""
      WHERE t.id = ANY(ARRAY(SELECT id FROM locked WHERE state = 'running')) AND $won
      RETURNING t.lease_token)
    , outcome AS (
      SELECT ids.ord, ids.id, coalesce(l.queue, d.queue) AS queue, d.state AS state,
             CASE WHEN l.state IN ('available', 'waiting') THEN 'done' WHEN l.state IS NOT NULL THEN 'requested'
                  WHEN d.state IS NOT NULL THEN 'refused' ELSE 'not-found' END AS outcome,
             CASE WHEN l.state IS NOT NULL THEN """) ++ fr0"$reason::text" ++ const(s"""
                  WHEN d.state IS NOT NULL THEN 'already ' || d.state END AS detail
      FROM ids LEFT JOIN locked AS l ON l.id = ids.id LEFT JOIN done AS d ON d.id = ids.id)""") ++
      recorded(AuditAction.Cancel, by)(
        const(s"SELECT count(pg_notify('${schema.cancelChannel}', r.lease_token || ' ' || left(") ++
          fr0"$reason" ++ const(", 1000))) FROM r")
      )
    untilWon(statement) {
      case Row("done", _, _) => Some(Cancel.Cancelled)
      case Row("requested", _, _) => Some(Cancel.Requested)
      case Row("refused", Some(state), _) =>
        FinishedState.values.find(_.name == state).map(Cancel.Finished(_))
      case Row("not-found", _, _) => Some(Cancel.NotFound)
      case _ => None
    }

  /**
   * Puts each of `ids` (distinct) that is dead or cancelled back to run now, with fresh attempts and its
   * errors, workflow and parents kept (not its batch, which counted its end), under the lock of its finished row, unless an unfinished task of its queue holds its
   * unique key (an earlier one of `ids` included: they go in in their order); wakes the queues of those put
   * back. What each one did.
   */
  def retry(ids: Vector[Long], by: Operator): ConnectionIO[Vector[Retry]] =
    val statement = start(ids) ++ locking(finished, "x.*") ++ live ++ const(s"""
    , acted AS (
      INSERT INTO $tasks AS t (id, queue, payload, priority, run_at, max_attempts, ordering_key, unique_key, errors, created_at, headers, workflow, after)
      SELECT g.id, g.queue, g.payload, g.priority, now(), g.max_attempts, g.ordering_key, g.unique_key, g.errors, g.created_at, g.headers, g.workflow, g.after
      FROM ids JOIN locked AS g ON g.id = ids.id
      WHERE g.state IN ('dead', 'cancelled') AND $won
      ORDER BY ids.ord
      ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO NOTHING
      RETURNING t.id, t.queue)
    , removed AS (DELETE FROM $finished AS f WHERE f.id = ANY(ARRAY(SELECT id FROM acted)))""") ++
      finishedOnly("retried") ++ recorded(AuditAction.Retry, by)(
        const(
          s"SELECT count(pg_notify('${schema.channel}', q.queue)) FROM (SELECT DISTINCT queue FROM acted) AS q"
        )
      )
    untilWon(statement) {
      case Row("done", _, _) => Some(Retry.Retried)
      case Row("not-found", _, _) => Some(Retry.NotFound)
      case Row("refused", Some(state), _) =>
        TaskState.parse(state).map(s => if retriable(s) then Retry.KeyHeld else Retry.Refused(s))
      case _ => None
    }

  /** Deletes each of `ids` (distinct) that is dead or cancelled, under its row's lock. What each one did. */
  def discard(ids: Vector[Long], by: Operator): ConnectionIO[Vector[Discard]] =
    val statement = start(ids) ++ locking(finished, "x.id, x.queue, x.state") ++ live ++ const(s"""
    , acted AS (
      DELETE FROM $finished AS f
      WHERE f.id = ANY(ARRAY(SELECT id FROM locked WHERE state IN ('dead', 'cancelled'))) AND $won
      RETURNING f.id)""") ++
      finishedOnly("discarded") ++ recorded(AuditAction.Discard, by)(const("SELECT 0"))
    untilWon(statement) {
      case Row("done", _, _) => Some(Discard.Discarded)
      case Row("not-found", _, _) => Some(Discard.NotFound)
      case Row("refused", Some(state), _) => TaskState.parse(state).map(Discard.Refused(_))
      case _ => None
    }

  /** The ids, numbered in their order. */
  private def start(ids: Vector[Long]): Fragment =
    fr0"WITH ids AS (SELECT u.id, u.ord FROM unnest(${ids.toArray}::bigint[]) WITH ORDINALITY AS u(id, ord))"

  // every table is read by `id = ANY(picked)` on its primary key, as [[Sql]] reads rows found again: an
  // index probe per id, whatever the table's statistics say
  private val picked = "ARRAY(SELECT id FROM ids)"

  /** Whether the statement locked every row its snapshot saw: only then does it act and record. */
  private val won = "(SELECT n FROM lost) = 0"

  /**
   * The rows of `table` with the ids, locked in id order (so that two calls lock in one order and cannot
   * deadlock), in their newest version (`locked`); and how many rows the snapshot saw that the lock no
   * longer found (`lost`).
   */
  private def locking(table: String, columns: String): Fragment = const(s"""
    , locked AS (SELECT $columns FROM $table AS x WHERE x.id = ANY($picked) ORDER BY x.id FOR UPDATE)
    , lost AS (
      SELECT count(*) AS n FROM $table AS x
      WHERE x.id = ANY($picked) AND NOT EXISTS (SELECT 1 FROM locked WHERE locked.id = x.id))""")

  /**
   * The live tasks with the ids, which a retry or a discard does not change: their state as [[TaskState]]
   * names it, for the answer.
   */
  private val live: Fragment = const(
    s"""
    , live AS (SELECT t.id, t.queue, ${TaskStateSql.live(
        schema
      )} AS state FROM $tasks AS t WHERE t.id = ANY($picked))"""
  )

  /**
   * The outcome of a retry or a discard, which only a dead or cancelled task (`locked`) can take, of each
   * id: done if `acted` returned it; refused, with the task's state and why; not-found if no table has it.
   */
  private def finishedOnly(verb: String): Fragment = const(s"""
    , outcome AS (
      SELECT ids.ord, ids.id, coalesce(g.queue, l.queue) AS queue,
             CASE WHEN a.id IS NULL THEN coalesce(g.state::text, l.state) END AS state,
             CASE WHEN a.id IS NOT NULL THEN 'done' WHEN g.id IS NULL AND l.id IS NULL THEN 'not-found'
                  ELSE 'refused' END AS outcome,
             CASE WHEN a.id IS NOT NULL OR (g.id IS NULL AND l.id IS NULL) THEN NULL
                  WHEN g.state IN ('dead', 'cancelled') THEN 'its unique key is held by a task that has not finished'
                  ELSE 'the task is ' || coalesce(g.state::text, l.state) || ': only a dead or cancelled task can be $verb'
             END AS detail
      FROM ids LEFT JOIN locked AS g ON g.id = ids.id LEFT JOIN live AS l ON l.id = ids.id
           LEFT JOIN acted AS a ON a.id = ids.id)""")

  /**
   * The audit entries of `outcome`, in the ids' order, unless the statement lost a row; then the statement's
   * rows: each id's outcome and finished state, and `lost`, with `told`, a query of one row that sends the
   * action's notifications.
   */
  private def recorded(action: AuditAction, by: Operator)(told: Fragment): Fragment =
    const(s"""
    , recorded AS (
      INSERT INTO $audit (operator, session, action, queue, task, outcome, detail)
      SELECT """) ++ fr0"${by.name}, ${by.session}" ++
      const(s""", '${action.name}', queue, id, outcome, detail
      FROM outcome WHERE $won ORDER BY ord)
    SELECT o.outcome, o.state, lost.n FROM outcome AS o CROSS JOIN lost CROSS JOIN (""") ++ told ++
      const(") AS told ORDER BY o.ord")

  /** Runs `statement` until it locks every row it saw; each row's answer, or an error if one makes no sense. */
  private def untilWon[A](statement: Fragment)(answer: Row => Option[A]): ConnectionIO[Vector[A]] =
    statement.query[Row].to[Vector].flatMap { rows =>
      if rows.exists(_.lost > 0) then untilWon(statement)(answer)
      else
        rows.traverse(row =>
          answer(row).fold(
            FC.raiseError[A](
              new IllegalStateException(s"an action's statement answered what it never answers: $row")
            )
          )(FC.pure)
        )
    }

object ActionSql:

  /**
   * A row of an action's statement: an id's outcome (an audit outcome's name); for a refusal, the task's
   * state (a cancel's: its finished state); `lost`.
   */
  final case class Row(outcome: String, state: Option[String], lost: Long)

  /** The states a retry applies to: a task in one of them that is refused has its unique key held. */
  private def retriable(state: TaskState): Boolean = state == TaskState.Dead || state == TaskState.Cancelled

  /**
   * `ids` cut, in their order, into runs without a repeated id, each as long as it can be: a statement does
   * not see its own changes, so an id that comes again starts a new statement, which sees the earlier one's.
   */
  def distinctRuns(ids: Vector[Long]): Vector[Vector[Long]] =
    ids.foldLeft((Vector.empty[Vector[Long]], Vector.empty[Long], Set.empty[Long])) {
      case ((runs, run, inRun), id) =>
        if inRun(id) then (runs :+ run, Vector(id), Set(id)) else (runs, run :+ id, inRun + id)
    } match
      case (runs, run, _) => if run.isEmpty then runs else runs :+ run
