package weir.postgres.internal

import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.postgres.Schema

/**
 * The statements that finish claims (see [[Sql]]): complete, fail, hand back, snooze, and the worker's last
 * hand-back. Each is guarded by the claims' tokens, and each but the completion honours a requested cancel.
 */
private[postgres] final class FinishSql(schema: Schema) extends SqlBase(schema):

  /**
   * Completes the claims `tokens`; keeps their tasks in `finished` when `keep`. Returns how many. With
   * `keyed` false (no claim has an ordering key) the next-head step is left out of the hottest statement;
   * a keyed claim passed as unkeyed costs its key a repair's delay, nothing more.
   */
  def complete(tokens: Array[Long], keep: Boolean, keyed: Boolean): ConnectionIO[Int] =
    val deleted =
      const(s"DELETE FROM $tasks AS t WHERE t.lease_token = ANY(") ++ fr0"$tokens" ++
        const(") AND t.state = 'running'")
    if keep then
      (const("WITH done AS (") ++ deleted ++ const(s""" RETURNING t.*)
      , moved AS (INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts, ordering_key, unique_key, errors, created_at, headers, worker)
        SELECT id, queue, payload, priority, 'completed', attempt, max_attempts, ordering_key, unique_key, errors, created_at, headers, lease_owner FROM done
        RETURNING 1)
      """) ++ (if keyed then nextHeads("done") else Fragment.empty) ++ const("""
      SELECT count(*)::int FROM moved""")).query[Int].unique
    else if keyed then
      (const("WITH done AS (") ++ deleted ++ const(" RETURNING t.id, t.queue, t.ordering_key)") ++
        nextHeads("done") ++ const(" SELECT count(*)::int FROM done")).query[Int].unique
    else deleted.update.run

  /**
   * Completes the claims `tokens(i)` with the results `results(i)` (JSON text): each task moves to
   * `finished`, completed, with its result, whatever `keepCompleted` says, so that the tasks that wait for it
   * can read it. Returns how many. `keyed` as in [[complete]].
   */
  def record(tokens: Array[Long], results: Array[String], keyed: Boolean): ConnectionIO[Int] =
    (const("WITH r AS (SELECT * FROM unnest(") ++ fr0"$tokens::bigint[], $results::text[]" ++
      const(s""") AS r(token, result))
    , done AS (DELETE FROM $tasks AS t WHERE t.lease_token = ANY(""") ++ fr0"$tokens" ++
      const(s""") AND t.state = 'running' RETURNING t.*)
    , moved AS (INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts, ordering_key, unique_key, errors, created_at, headers, worker, result)
      SELECT d.id, d.queue, d.payload, d.priority, 'completed', d.attempt, d.max_attempts, d.ordering_key, d.unique_key,
             d.errors, d.created_at, d.headers, d.lease_owner, r.result::jsonb
      FROM done AS d JOIN r ON r.token = d.lease_token
      RETURNING 1)
    """) ++ (if keyed then nextHeads("done") else Fragment.empty) ++ const("""
    SELECT count(*)::int FROM moved""")).query[Int].unique

  /**
   * Finishes the failed claims `tokens`: a claim whose `delays(i)` is negative, or whose task has used its
   * attempts, moves to `finished` as dead; one whose cancel was requested ([[weir.postgres.TaskActions.cancel]])
   * moves there as cancelled; the others become available again after `delays(i)` ms. Each task's error is
   * appended to its errors with its attempt number (and a cancelled one's reason after it). The claims are
   * locked and read first, so that a cancel committed before this statement could lock a row is seen, and
   * one that waits for the lock finds the row finished or available. Returns `(retried, dead, cancelled)`.
   */
  def fail(tokens: Array[Long], errors: Array[String], delays: Array[Long]): ConnectionIO[(Int, Int, Int)] =
    (const("WITH f AS (SELECT * FROM unnest(") ++
      fr0"$tokens::bigint[], $errors::text[], $delays::bigint[]" ++
      const(s""") AS f(token, error, delay_ms))
    , claimed AS (
      SELECT t.id, f.error, f.delay_ms,
             (f.delay_ms < 0 OR t.attempt >= t.max_attempts OR t.cancel_requested IS NOT NULL) AS dead
      FROM $tasks AS t JOIN f ON f.token = t.lease_token
      WHERE t.lease_token = ANY(""") ++ fr0"$tokens" ++ const(s""") AND t.state = 'running'
      FOR UPDATE OF t)
    , dead AS (
      DELETE FROM $tasks AS t USING claimed AS c
      WHERE t.lease_token = ANY(""") ++ fr0"$tokens" ++ const(s""") AND t.id = c.id AND c.dead
      RETURNING t.*, c.error)
    , moved AS (
      INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts, ordering_key, unique_key, errors, created_at, headers, worker)
      SELECT id, queue, payload, priority, ${finishedState(
          "cancel_requested"
        )}, attempt, max_attempts, ordering_key, unique_key,
             errors || jsonb_build_array(jsonb_build_object('attempt', attempt, 'at', now(), 'worker', lease_owner, 'error', error))
               || ${cancelEntry("attempt", "cancel_requested")}, created_at, headers, lease_owner
      FROM dead RETURNING state = 'cancelled' AS cancelled)
    """) ++ nextHeads("dead") ++ const(s"""
    , retried AS (
      UPDATE $tasks AS t
      SET state = 'available', run_at = now() + c.delay_ms * interval '1 millisecond',
          lease_owner = NULL, lease_expires_at = NULL, lease_token = NULL,
          errors = t.errors || jsonb_build_array(jsonb_build_object('attempt', t.attempt, 'at', now(), 'worker', t.lease_owner, 'error', c.error))
      FROM claimed AS c
      WHERE t.lease_token = ANY(""") ++ fr0"$tokens" ++ const(s""") AND t.id = c.id AND NOT c.dead
      RETURNING 1)
    SELECT (SELECT count(*) FROM retried)::int, (SELECT count(*) FILTER (WHERE NOT cancelled) FROM moved)::int,
           (SELECT count(*) FILTER (WHERE cancelled) FROM moved)::int""")).query[(Int, Int, Int)].unique

  /**
   * Hands back the claims `tokens`, which never started: available again at once, in their old place, and
   * their attempt not counted; or cancelled, if their cancel was requested. Returns `(handed back, cancelled)`.
   */
  def handBack(tokens: Array[Long]): ConnectionIO[(Int, Int)] =
    putBack(
      None,
      const("t.lease_token = ANY(") ++ fr0"$tokens" ++ const(")"),
      const("state = 'available', attempt = t.attempt - 1")
    )

  /**
   * Puts back the claims `tokens`, whose handlers asked to run again later: available after `delays(i)`
   * ms, their attempt not counted and their errors unchanged; or cancelled, if their cancel was requested.
   * A task keeps its id, so it stays its key's head and the key's later tasks wait for it. Returns
   * `(snoozed, cancelled)`.
   */
  def snooze(tokens: Array[Long], delays: Array[Long]): ConnectionIO[(Int, Int)] =
    putBack(
      Some(
        const(", s.delay_ms FROM unnest(") ++ fr0"$tokens::bigint[], $delays::bigint[]" ++
          const(s") AS s(token, delay_ms) JOIN $tasks AS t ON t.lease_token = s.token")
      ),
      const("t.lease_token = ANY(") ++ fr0"$tokens" ++ const(")"),
      const(
        "state = 'available', attempt = t.attempt - 1, run_at = now() + c.delay_ms * interval '1 millisecond'"
      )
    )

  /**
   * Hands back every claim `owner` still holds in `queue`, as never started (a worker's last step), or
   * cancelled if its cancel was requested. Returns `(handed back, cancelled)`.
   */
  def handBackAll(queue: String, owner: Long): ConnectionIO[(Int, Int)] =
    putBack(
      None,
      const("t.queue = ") ++ fr0"$queue" ++ const(" AND t.lease_owner = ") ++ fr0"$owner",
      const("state = 'available', attempt = t.attempt - 1")
    )

  /**
   * Puts back, uncounted, the running tasks `t` for which `where` holds, with `set` as the update's
   * assignments (reading the claim's columns as `c`; the lease is cleared here): except those whose cancel
   * was requested, which move to `finished` as cancelled, the reason among their errors. `from`, if given,
   * adds columns to the claim and replaces its `FROM tasks AS t` (it starts with `, columns FROM`).
   * As in [[fail]], the rows are locked and read first, their conditions checked again on the row locked,
   * so that a cancel committed before the lock is seen and one that waits for it finds the row put back.
   * Returns `(put back, cancelled)`.
   */
  private def putBack(from: Option[Fragment], where: Fragment, set: Fragment): ConnectionIO[(Int, Int)] =
    val source = from.getOrElse(const(s" FROM $tasks AS t"))
    (const("WITH claimed AS (SELECT t.id, t.cancel_requested IS NOT NULL AS cancel") ++ source ++
      const(" WHERE ") ++ where ++ const(s""" AND t.state = 'running' FOR UPDATE OF t)
    , cancelled AS (
      DELETE FROM $tasks AS t USING claimed AS c
      WHERE t.id = ANY(ARRAY(SELECT id FROM claimed)) AND t.id = c.id AND c.cancel
      RETURNING t.*)
    , moved AS (
      INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts, ordering_key, unique_key, errors, created_at, headers)
      SELECT id, queue, payload, priority, 'cancelled', attempt - 1, max_attempts, ordering_key, unique_key,
             errors || ${cancelEntry("attempt - 1", "cancel_requested")}, created_at, headers
      FROM cancelled RETURNING 1)
    """) ++ nextHeads("cancelled") ++ const(s"""
    , put_back AS (
      UPDATE $tasks AS t SET """) ++ set ++
      const(s""", lease_owner = NULL, lease_expires_at = NULL, lease_token = NULL
      FROM claimed AS c
      WHERE t.id = ANY(ARRAY(SELECT id FROM claimed)) AND t.id = c.id AND NOT c.cancel
      RETURNING 1)
    SELECT (SELECT count(*) FROM put_back)::int, (SELECT count(*) FROM moved)::int""")).query[(
        Int,
        Int
    )].unique
