package weir.postgres.internal

import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.postgres.Schema

/**
 * The statements of a worker's life (see [[Sql]]): its registration, its beat, its session's lock, its
 * removal, and the rescue of the claims of workers that died.
 */
private[postgres] final class WorkerSql(schema: Schema) extends SqlBase(schema):

  /** Registers a worker process that heartbeats every `beatEveryMillis`; returns its id. */
  def register(name: String, beatEveryMillis: Long): ConnectionIO[Long] =
    (const(s"INSERT INTO $workers (name, beat_every) VALUES (") ++
      fr0"$name, $beatEveryMillis * interval '1 millisecond') RETURNING id").query[Long].unique

  /**
   * A worker's beat, as one statement run in autocommit ([[Run.single]]), asking for an asynchronous commit
   * of its own: marks `owner` alive now (registering it again under the same id if a rescuer removed it),
   * extends to `now + leaseMillis` the leases of the claims `due` (those of its claims the worker found
   * due: [[Claims.due]]; the others' rows are not written), and returns, of all its claims `tokens`, those no running
   * task holds any more (finished, or rescued by another worker) and those whose cancel was requested, with
   * its reason (the fallback of a missed notification: see
   * [[weir.postgres.TaskActions.cancel]]). One
   * statement, so that no transaction of the beat is ever left open on the server holding the worker's
   * row: a connection that goes silent between the statements of a transaction leaves it open until the
   * server's TCP gives up, and every later beat would wait on that row.
   */
  def beat(
      owner: Long,
      name: String,
      beatEveryMillis: Long,
      tokens: Array[Long],
      due: Array[Long],
      leaseMillis: Long
  ): ConnectionIO[Sql.Beat] =
    (const(s"WITH alive AS (INSERT INTO $workers (id, name, beat_every) VALUES (") ++
      fr0"$owner, $name, $beatEveryMillis * interval '1 millisecond'" ++
      const(") ON CONFLICT (id) DO UPDATE SET heartbeat_at = now() RETURNING 1)") ++
      const(s", extended AS (UPDATE $tasks SET lease_expires_at = now() + ") ++ fr0"$leaseMillis" ++
      const(" * interval '1 millisecond' WHERE lease_token = ANY(") ++ fr0"$due" ++
      const(") AND state = 'running' RETURNING 1)") ++
      const(
        " SELECT h.token, t.cancel_requested FROM set_config('synchronous_commit', 'off', true) AS async, unnest("
      ) ++
      fr0"$tokens" ++
      const(
        s"::bigint[]) AS h(token) LEFT JOIN $tasks AS t ON t.lease_token = h.token AND t.state = 'running' WHERE t.id IS NULL OR t.cancel_requested IS NOT NULL"
      ))
      .query[(Long, Option[String])].to[Vector].map(Sql.Beat.of)

  /**
   * Takes `owner`'s session lock on the connection that runs it and records when, in one statement, as
   * plain SQL for a connection outside the pool. It updates one row if it took the lock; none if the
   * worker's row is missing (the lock is then not tried) or another session still holds the lock.
   */
  def holdSession(owner: Long): String =
    s"UPDATE $workers SET session_since = now() WHERE id = $owner AND pg_try_advisory_lock(${schema.sessionLockClass}, ($owner % 2147483648)::int)"

  /**
   * Ends the sessions other than the one running it that hold `owner`'s session lock, as plain SQL for the
   * worker's own session. Only the worker's sessions take its lock, one at a time, so another holder is an
   * earlier session of this worker that the server still keeps (its connection went silent rather than
   * closed): left alone, it would hold the lock until the server's TCP gives up, hours by default.
   */
  def endEarlierSessions(owner: Long): String =
    s"""SELECT count(pg_terminate_backend(pid)) FROM pg_locks
        WHERE locktype = 'advisory' AND granted AND objsubid = 2 AND classid = ${schema.sessionLockClass}
          AND objid = $owner % 2147483648 AND pid <> pg_backend_pid()
          AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"""

  /** Lets go `owner`'s session lock on the connection that runs it (a worker that left), as plain SQL. */
  def releaseSession(owner: Long): String =
    s"SELECT pg_advisory_unlock(${schema.sessionLockClass}, ($owner % 2147483648)::int)"

  /** Removes a worker's row (on a clean stop). */
  def deregister(owner: Long): ConnectionIO[Int] =
    (const(s"DELETE FROM $workers WHERE id = ") ++ fr0"$owner").update.run

  /**
   * Rescues up to `limit` running tasks whose owner is gone or, when `leases`, whose own lease has expired:
   * each goes back to available at once, keeping its run-at (so its place in line: a rescued task is not
   * sent behind a backlog), with the reason appended to its errors, or to dead if it has used its attempts,
   * or to cancelled if its cancel was requested (its worker died before it could interrupt it). Rows another
   * rescuer holds are skipped. Returns `(rescued, dead, cancelled)`.
   *
   * An owner is gone when it has no row, when it has not heartbeaten for `deadAfterMillis`, or when its
   * session lock is free while its heartbeat is more than one period late (its process died and the
   * server ended its session; see migration 3 for why neither half alone is enough). `pg_locks` is read
   * only for owners whose heartbeat is late: the `CASE` does not evaluate a branch whose condition failed.
   * The error's time is the clock's when the row is changed, not the statement's start: a statement that
   * waited finds a dead worker's lock free only once it is dead, and its record must not say earlier.
   *
   * What it reads: the owners of running tasks, one probe of the `tasks_running` index per (queue, owner)
   * pair (`held`, [[skipScan]]), then, by the same index, the running tasks of the pairs whose owner is
   * gone (`gone` is materialized and joined laterally, so that the planner cannot join every running task
   * to `held` before it knows which owners are gone). So a round among live workers reads as many index
   * entries as there are pairs, however many tasks they hold. Leases are the one condition no index serves
   * (a live worker's beat extends them, so an expired one is a claim its worker lost track of): with
   * `leases`, the statement also reads every running task's lease, which the rescuer asks for once per
   * quarter of a lease ([[Rescuer]]), not every round.
   */
  def rescue(deadAfterMillis: Long, limit: Int, leases: Boolean): ConnectionIO[(Int, Int, Int)] =
    val held = skipScan("held", "queue", "lease_owner", "w.state = 'running'")
    (const(s"""WITH RECURSIVE $held, owners AS (
      SELECT w.id, CASE
        WHEN w.heartbeat_at < now() - """) ++ fr0"$deadAfterMillis" ++ const(s""" * interval '1 millisecond'
          THEN 'worker ' || w.id || ' stopped heartbeating'
        WHEN w.heartbeat_at < now() - w.beat_every AND w.session_since > pg_postmaster_start_time()
             AND NOT EXISTS (
               SELECT 1 FROM pg_locks AS l
               WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                 AND l.classid = ${schema.sessionLockClass} AND l.objid = w.id % 2147483648)
          THEN 'worker ' || w.id || ' lost its database session'
        END AS gone
      FROM $workers AS w
    ), gone AS MATERIALIZED (
      SELECT h.queue, h.lease_owner FROM held AS h LEFT JOIN owners AS o ON o.id = h.lease_owner
      WHERE o.id IS NULL OR o.gone IS NOT NULL
    ), candidates AS (
      SELECT x.id FROM gone AS g CROSS JOIN LATERAL (
        SELECT t.id FROM $tasks AS t
        WHERE t.state = 'running' AND t.queue = g.queue AND t.lease_owner = g.lease_owner) AS x
      UNION
      SELECT t.id FROM $tasks AS t WHERE """) ++ fr0"$leases" ++ const(s""" AND t.state = 'running'
        AND t.lease_expires_at < now()
    ), lost AS (
      SELECT t.id, CASE WHEN o.id IS NULL THEN 'worker ' || t.lease_owner || ' stopped heartbeating'
                        ELSE coalesce(o.gone, 'lease expired') END AS reason,
             t.cancel_requested IS NOT NULL AS cancel
      FROM $tasks AS t
      LEFT JOIN owners AS o ON o.id = t.lease_owner
      WHERE t.id = ANY(ARRAY(SELECT id FROM candidates)) AND t.state = 'running'
        AND (o.id IS NULL OR o.gone IS NOT NULL OR t.lease_expires_at < now())
      LIMIT """) ++ fr0"$limit" ++ const(s"""
      FOR UPDATE OF t SKIP LOCKED
    ), dead AS (
      DELETE FROM $tasks AS t USING lost
      WHERE t.id = ANY(ARRAY(SELECT id FROM lost)) AND t.id = lost.id AND (t.attempt >= t.max_attempts OR lost.cancel)
      RETURNING t.*, lost.reason
    ), moved AS (
      INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts, ordering_key, unique_key, errors, created_at, headers, worker)
      SELECT id, queue, payload, priority, ${finishedState("cancel_requested")}, attempt, max_attempts, ordering_key, unique_key,
             errors || jsonb_build_array(jsonb_build_object('attempt', attempt, 'at', clock_timestamp(), 'worker', lease_owner, 'error', reason))
               || ${cancelEntry("attempt", "cancel_requested")}, created_at, headers, lease_owner
      FROM dead RETURNING state = 'cancelled' AS cancelled
    )""") ++ nextHeads("dead") ++ const(s"""
    , rescued AS (
      UPDATE $tasks AS t
      SET state = 'available', lease_owner = NULL, lease_expires_at = NULL, lease_token = NULL,
          errors = t.errors || jsonb_build_array(jsonb_build_object('attempt', t.attempt, 'at', clock_timestamp(), 'worker', t.lease_owner, 'error', lost.reason))
      FROM lost
      WHERE t.id = ANY(ARRAY(SELECT id FROM lost)) AND t.id = lost.id AND t.attempt < t.max_attempts AND NOT lost.cancel
      RETURNING 1
    )
    SELECT (SELECT count(*) FROM rescued)::int, (SELECT count(*) FILTER (WHERE NOT cancelled) FROM moved)::int,
           (SELECT count(*) FILTER (WHERE cancelled) FROM moved)::int""")).query[(Int, Int, Int)].unique

  /** Removes worker rows whose heartbeat is older than `olderThanMillis`. */
  def forgetWorkers(olderThanMillis: Long): ConnectionIO[Int] =
    (const(s"DELETE FROM $workers WHERE heartbeat_at < now() - ") ++ fr0"$olderThanMillis" ++
      const(" * interval '1 millisecond'")).update.run
