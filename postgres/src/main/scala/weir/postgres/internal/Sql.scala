package weir.postgres.internal

import doobie.*
import doobie.implicits.*
import cats.syntax.functor.*
import doobie.postgres.implicits.*
import weir.postgres.Schema

import java.time.Instant

/**
 * Every statement weir-postgres runs, for one schema. Each is a single round trip; batches travel as
 * arrays. Finalisations (complete, fail, release) name the claim they finish by its token, drawn afresh
 * for every claim and cleared by every finish and rescue, so a late finisher cannot overwrite a rescue and
 * a rescue cannot overwrite a completion: whichever commits first wins, the other changes no row.
 *
 * Batches of claims are matched with `= ANY(array)` on the token's unique index rather than by joining an
 * `unnest`, and rows picked in one part of a statement are found again by `id = ANY(ARRAY(…))` rather than
 * by a join alone: a join's plan depends on the table's statistics, and a queue's are often stale (analyzed
 * while it was empty, then a burst arrives). Planned for an empty table, a join may walk the whole primary
 * key once for every picked row; an `= ANY` on an index has no such plan.
 */
private[postgres] final class Sql(schema: Schema):
  import Sql.*

  private val tasks = schema("tasks")
  private val finished = schema("finished")
  private val workers = schema("workers")
  private val queues = schema("queues")

  private def const(s: String): Fragment = Fragment.const0(s)

  // ---- enqueue

  /** One task through the schema's SQL function: `(id, inserted)`. */
  def enqueueOne(queue: String, t: EncodedTask): ConnectionIO[(Long, Boolean)] =
    (const(s"SELECT task_id, inserted FROM ${schema("enqueue")}(") ++
      fr0"$queue, ${t.payload}::jsonb, ${t.priority}, now() + ${t.delayMillis} * interval '1 millisecond', " ++
      fr0"${t.maxAttempts}, ${t.orderingKey}, ${t.uniqueKey}, ${t.headers}::jsonb)").query[(
        Long,
        Boolean
    )].unique

  /**
   * A batch without unique keys in one statement: the rows are inserted in input order, each drawing its id
   * from the identity sequence as it is inserted, so the returned ids, sorted, are the inputs' ids in order.
   */
  def enqueuePlain(queue: String, batch: Vector[EncodedTask]): ConnectionIO[Vector[Long]] =
    val payloads = batch.map(_.payload).toArray
    val priorities = batch.map(_.priority).toArray
    val delays = batch.map(_.delayMillis).toArray
    val maxAttempts = batch.map(_.maxAttempts).toArray
    val orderingKeys = batch.map(_.orderingKey).toArray
    val firsts = firstOfKey(batch)
    val headers = batch.map(_.headers).toArray
    (const(
      s"INSERT INTO $tasks (queue, payload, priority, run_at, max_attempts, ordering_key, head, headers) SELECT "
    ) ++
      fr0"$queue" ++
      const(""", payload::jsonb, priority::smallint, now() + delay_ms * interval '1 millisecond',
             max_attempts, ordering_key, """) ++ headAtInsert(queue) ++ const(""", headers::jsonb
      FROM unnest(""") ++
      fr0"$payloads::text[], $priorities::int[], $delays::bigint[], $maxAttempts::int[], $orderingKeys::text[], $firsts::int[], $headers::text[]" ++
      const(
        ") AS i(payload, priority, delay_ms, max_attempts, ordering_key, first_of_key, headers) RETURNING id"
      ))
      .query[Long]
      .to[Vector]
      .map(_.sorted)

  /**
   * A batch in one statement. Ids are drawn in input order before the insert, so each input row is
   * matched to its id; rows whose unique key is held return the holder's id when this statement's
   * snapshot shows it, or nothing (the caller enqueues them again: the holder committed after the
   * snapshot, or is another row of this batch).
   */
  def enqueueMany(queue: String, batch: Vector[EncodedTask]): ConnectionIO[Vector[(Int, Long, Boolean)]] =
    val payloads = batch.map(_.payload).toArray
    val priorities = batch.map(_.priority).toArray
    val delays = batch.map(_.delayMillis).toArray
    val maxAttempts = batch.map(_.maxAttempts).toArray
    val orderingKeys = batch.map(_.orderingKey).toArray
    val uniqueKeys = batch.map(_.uniqueKey).toArray
    val firsts = firstOfKey(batch)
    val headers = batch.map(_.headers).toArray
    (const(s"""WITH input AS (
      SELECT i.*, nextval('${tasks}_id_seq') AS id
      FROM unnest(""") ++
      fr0"$payloads::text[], $priorities::int[], $delays::bigint[], $maxAttempts::int[], $orderingKeys::text[], $uniqueKeys::text[], $firsts::int[], $headers::text[]" ++
      const(s""") WITH ORDINALITY AS i(payload, priority, delay_ms, max_attempts, ordering_key, unique_key, first_of_key, headers, n)
      ORDER BY i.n
    ), ins AS (
      INSERT INTO $tasks AS t (id, queue, payload, priority, run_at, max_attempts, ordering_key, unique_key, head, headers)
      SELECT id, """) ++ fr0"$queue" ++ const(s""", payload::jsonb, priority::smallint,
             now() + delay_ms * interval '1 millisecond', max_attempts, ordering_key, unique_key, """) ++
      headAtInsert(queue) ++ const(s""", headers::jsonb
      FROM input AS i ORDER BY n
      ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO NOTHING
      RETURNING t.id
    )
    SELECT input.n::int, coalesce(ins.id, held.id), ins.id IS NOT NULL
    FROM input
    LEFT JOIN ins ON ins.id = input.id
    LEFT JOIN $tasks AS held ON ins.id IS NULL AND held.queue = """) ++ fr0"$queue" ++ const(
        s""" AND held.unique_key = input.unique_key
    WHERE ins.id IS NOT NULL OR held.id IS NOT NULL"""
      )).query[(Int, Long, Boolean)].to[Vector]

  // ---- claim

  /**
   * Claims up to `limit` available tasks of `queue` for `owner`, by priority, then run-at, then id, within
   * what the queue's controls allow (paused: none; a limit on running tasks; a rate). A task with an
   * ordering key is claimed only while it is its key's head (no task of its key with a smaller id is left,
   * and none is running); the unique index on running keys makes the database refuse the rare claim that
   * races another one for the same key (the caller claims again). The claim index holds only the tasks
   * marked `head` (see [[nextHeads]]), so a key's waiting tasks cost the claim nothing.
   *
   * The statement is the schema's `claim_controlled` function (migration 6), planned with bitmap and
   * sequential scans off so that stale statistics cannot turn it into a scan of the whole backlog. It asks
   * for an asynchronous commit of its own transaction, so that it can run in autocommit ([[Run.single]]);
   * the setting is made here, outside the function, whose own settings end when it returns.
   *
   * The rows come back in claim order, sorted by the server: `RETURNING` alone gives them in no defined
   * order. `created_at` travels as microseconds since the epoch, which the driver reads as a plain number
   * rather than parsing a timestamp's text. For a queue with a control, a last row without a task says
   * what the controls did ([[Control]]).
   */
  def claim(queue: String, owner: Long, limit: Int, leaseMillis: Long): ConnectionIO[Claim] =
    (const(
      s"SELECT c.* FROM set_config('synchronous_commit', 'off', true) AS async, ${schema("claim_controlled")}("
    ) ++
      fr0"$queue, $owner, $limit, $leaseMillis" ++ const(") AS c")).query[ClaimRow].to[Vector].map(Claim.of)

  // ---- queue controls

  /** Gives `queue` a row of controls (none set) unless it has one. */
  def addQueue(queue: String): ConnectionIO[Int] =
    (const(s"INSERT INTO $queues (name) VALUES (") ++ fr0"$queue" ++
      const(") ON CONFLICT (name) DO NOTHING")).update.run

  // ---- finish

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
      , moved AS (INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts, ordering_key, unique_key, errors, created_at, headers)
        SELECT id, queue, payload, priority, 'completed', attempt, max_attempts, ordering_key, unique_key, errors, created_at, headers FROM done
        RETURNING 1)
      """) ++ (if keyed then nextHeads("done") else Fragment.empty) ++ const("""
      SELECT count(*)::int FROM moved""")).query[Int].unique
    else if keyed then
      (const("WITH done AS (") ++ deleted ++ const(" RETURNING t.id, t.queue, t.ordering_key)") ++
        nextHeads("done") ++ const(" SELECT count(*)::int FROM done")).query[Int].unique
    else deleted.update.run

  /**
   * Finishes the failed claims `tokens`: a claim whose `delays(i)` is negative, or whose task has used its
   * attempts, moves to `finished` as dead; one whose cancel was requested ([[weir.postgres.TaskAdmin.cancel]])
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
      INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts, ordering_key, unique_key, errors, created_at, headers)
      SELECT id, queue, payload, priority, ${finishedState(
          "cancel_requested"
        )}, attempt, max_attempts, ordering_key, unique_key,
             errors || jsonb_build_array(jsonb_build_object('attempt', attempt, 'at', now(), 'error', error))
               || ${cancelEntry("attempt", "cancel_requested")}, created_at, headers
      FROM dead RETURNING state = 'cancelled' AS cancelled)
    """) ++ nextHeads("dead") ++ const(s"""
    , retried AS (
      UPDATE $tasks AS t
      SET state = 'available', run_at = now() + c.delay_ms * interval '1 millisecond',
          lease_owner = NULL, lease_expires_at = NULL, lease_token = NULL,
          errors = t.errors || jsonb_build_array(jsonb_build_object('attempt', t.attempt, 'at', now(), 'error', c.error))
      FROM claimed AS c
      WHERE t.lease_token = ANY(""") ++ fr0"$tokens" ++ const(s""") AND t.id = c.id AND NOT c.dead
      RETURNING 1)
    SELECT (SELECT count(*) FROM retried)::int, (SELECT count(*) FILTER (WHERE NOT cancelled) FROM moved)::int,
           (SELECT count(*) FILTER (WHERE cancelled) FROM moved)::int""")).query[(Int, Int, Int)].unique

  /**
   * Hands back the claims `tokens`, which never started: available again at once, in their old place, and
   * their attempt not counted; or cancelled, if their cancel was requested. Returns `(released, cancelled)`.
   */
  def release(tokens: Array[Long]): ConnectionIO[(Int, Int)] =
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
   * cancelled if its cancel was requested. Returns `(released, cancelled)`.
   */
  def releaseAll(queue: String, owner: Long): ConnectionIO[(Int, Int)] =
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

  /** The `finished_state` of a task leaving `tasks` through failure: cancelled if `cancel` is set, or dead. */
  private def finishedState(cancel: String): String =
    s"(CASE WHEN $cancel IS NULL THEN 'dead' ELSE 'cancelled' END)::${schema("finished_state")}"

  /**
   * The errors' entry of a cancel whose reason is the column `cancel` (an empty array when it is null), for
   * attempt `attempt`.
   */
  private def cancelEntry(attempt: String, cancel: String): String =
    s"(CASE WHEN $cancel IS NULL THEN '[]'::jsonb ELSE jsonb_build_array(jsonb_build_object('attempt', $attempt, 'at', now(), 'error', 'cancelled: ' || $cancel)) END)"

  // ---- workers and leases

  /** Registers a worker process that heartbeats every `beatEveryMillis`; returns its id. */
  def register(name: String, beatEveryMillis: Long): ConnectionIO[Long] =
    (const(s"INSERT INTO $workers (name, beat_every) VALUES (") ++
      fr0"$name, $beatEveryMillis * interval '1 millisecond') RETURNING id").query[Long].unique

  /**
   * A worker's beat, as one statement run in autocommit ([[Run.single]]), asking for an asynchronous commit
   * of its own: marks `owner` alive now (registering it again under the same id if a rescuer removed it),
   * extends to `now + leaseMillis` the leases of the claims `tokens` that end within half a lease, and
   * returns the tokens no running task holds any more (finished, or rescued by another worker) and those
   * whose cancel was requested, with its reason (the fallback of a missed notification: see
   * [[weir.postgres.TaskAdmin.cancel]]). One
   * statement, so that no transaction of the beat is ever left open on the server holding the worker's
   * row: a connection that goes silent between the statements of a transaction leaves it open until the
   * server's TCP gives up, and every later beat would wait on that row.
   */
  def beat(owner: Long, name: String, beatEveryMillis: Long, tokens: Array[Long], leaseMillis: Long)
      : ConnectionIO[Sql.Beat] =
    (const(s"WITH alive AS (INSERT INTO $workers (id, name, beat_every) VALUES (") ++
      fr0"$owner, $name, $beatEveryMillis * interval '1 millisecond'" ++
      const(") ON CONFLICT (id) DO UPDATE SET heartbeat_at = now() RETURNING 1)") ++
      const(s", extended AS (UPDATE $tasks SET lease_expires_at = now() + ") ++ fr0"$leaseMillis" ++
      const(" * interval '1 millisecond' WHERE lease_token = ANY(") ++ fr0"$tokens" ++
      const(") AND state = 'running' AND lease_expires_at < now() + ") ++ fr0"${leaseMillis / 2}" ++
      const(" * interval '1 millisecond' RETURNING 1)") ++
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

  /** Removes a worker's row (on a clean stop). */
  def deregister(owner: Long): ConnectionIO[Int] =
    (const(s"DELETE FROM $workers WHERE id = ") ++ fr0"$owner").update.run

  /**
   * Rescues up to `limit` running tasks whose owner is gone or whose own lease has expired: each goes back
   * to available at once, keeping its run-at (so its place in line: a rescued task is not sent behind a
   * backlog), with the reason appended to its errors, or to dead if it has used its attempts, or to
   * cancelled if its cancel was requested (its worker died before it could interrupt it). Rows another
   * rescuer holds are skipped. Returns `(rescued, dead, cancelled)`.
   *
   * An owner is gone when it has no row, when it has not heartbeaten for `deadAfterMillis`, or when its
   * session lock is free while its heartbeat is more than one period late (its process died and the
   * server ended its session; see migration 3 for why neither half alone is enough). `pg_locks` is read
   * only for owners whose heartbeat is late: the `CASE` does not evaluate a branch whose condition failed.
   * The error's time is the clock's when the row is changed, not the statement's start: a statement that
   * waited finds a dead worker's lock free only once it is dead, and its record must not say earlier.
   */
  def rescue(deadAfterMillis: Long, limit: Int): ConnectionIO[(Int, Int, Int)] =
    (const(s"""WITH owners AS (
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
    ), lost AS (
      SELECT t.id, CASE WHEN o.id IS NULL THEN 'worker ' || t.lease_owner || ' stopped heartbeating'
                        ELSE coalesce(o.gone, 'lease expired') END AS reason,
             t.cancel_requested IS NOT NULL AS cancel
      FROM $tasks AS t
      LEFT JOIN owners AS o ON o.id = t.lease_owner
      WHERE t.state = 'running' AND (o.id IS NULL OR o.gone IS NOT NULL OR t.lease_expires_at < now())
      LIMIT """) ++ fr0"$limit" ++ const(s"""
      FOR UPDATE OF t SKIP LOCKED
    ), dead AS (
      DELETE FROM $tasks AS t USING lost
      WHERE t.id = ANY(ARRAY(SELECT id FROM lost)) AND t.id = lost.id AND (t.attempt >= t.max_attempts OR lost.cancel)
      RETURNING t.*, lost.reason
    ), moved AS (
      INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts, ordering_key, unique_key, errors, created_at, headers)
      SELECT id, queue, payload, priority, ${finishedState("cancel_requested")}, attempt, max_attempts, ordering_key, unique_key,
             errors || jsonb_build_array(jsonb_build_object('attempt', attempt, 'at', clock_timestamp(), 'error', reason))
               || ${cancelEntry("attempt", "cancel_requested")}, created_at, headers
      FROM dead RETURNING state = 'cancelled' AS cancelled
    )""") ++ nextHeads("dead") ++ const(s"""
    , rescued AS (
      UPDATE $tasks AS t
      SET state = 'available', lease_owner = NULL, lease_expires_at = NULL, lease_token = NULL,
          errors = t.errors || jsonb_build_array(jsonb_build_object('attempt', t.attempt, 'at', clock_timestamp(), 'error', lost.reason))
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

  /** Wakes the workers of `queue` at commit, as an insert does. */
  def wakeQueue(queue: String): ConnectionIO[Unit] =
    (const(s"SELECT count(*)::int FROM (SELECT pg_notify('${schema.channel}', ") ++ fr0"$queue)) AS n")
      .query[Int]
      .unique
      .void

  // ---- key heads

  /**
   * Which tasks of a batch may be their key's head (see [[headAtInsert]]): those with no earlier task of
   * their ordering key in the batch. An earlier task with a unique key does not count, as it may be
   * refused; marking the next one too only costs the claim a probe.
   */
  private def firstOfKey(batch: Vector[EncodedTask]): Array[Int] =
    val sure = scala.collection.mutable.HashSet.empty[String]
    batch.map { t =>
      val first = t.orderingKey.forall { key =>
        val first = !sure.contains(key)
        if t.uniqueKey.isEmpty then sure += key
        first
      }
      if first then 1 else 0 // doobie sends a Boolean array as bit[], which does not cast to boolean[]
    }.toArray

  /**
   * The `head` of a row being inserted from an input `i` with columns `ordering_key` and `first_of_key` (1 or 0): a
   * keyed task is its key's head unless an earlier task of its batch or of the table has the key. A task
   * whose key's last task is being removed by a transaction this insert cannot see yet is left unmarked;
   * [[repairHeads]] finds it.
   */
  private def headAtInsert(queue: String): Fragment =
    const(s"""(i.ordering_key IS NULL OR (i.first_of_key = 1 AND NOT EXISTS (
      SELECT 1 FROM $tasks AS e WHERE e.queue = """) ++ fr0"$queue" ++
      const(" AND e.ordering_key = i.ordering_key)))")

  /**
   * A common table expression (to follow others in a `WITH`) that marks as head the next task of every
   * ordering key whose task the expression `removed` (with columns `id`, `queue`, `ordering_key`) removes
   * from `tasks`. Every statement that removes tasks includes it; it runs whether or not it is referenced.
   */
  def nextHeads(removed: String): Fragment =
    const(s"""
    , next_heads AS (
      UPDATE $tasks AS n SET head = true
      WHERE NOT n.head AND n.id = ANY(ARRAY(
        SELECT (SELECT e.id FROM $tasks AS e
                WHERE e.queue = r.queue AND e.ordering_key = r.ordering_key
                  AND NOT EXISTS (SELECT 1 FROM $removed AS x WHERE x.id = e.id)
                ORDER BY e.id LIMIT 1)
        FROM $removed AS r WHERE r.ordering_key IS NOT NULL)))""")

  /**
   * Marks the head of every key left without a mark (see [[headAtInsert]]): one walk of the waiting
   * tasks' index taking one entry per key, then the key's earliest task. Returns the queue of each task
   * it marked.
   */
  def repairHeads: ConnectionIO[Vector[String]] =
    const(s"""WITH RECURSIVE waiting(queue, ordering_key) AS (
      (SELECT w.queue, w.ordering_key FROM $tasks AS w
       WHERE w.ordering_key IS NOT NULL AND NOT w.head
       ORDER BY w.queue, w.ordering_key LIMIT 1)
      UNION ALL
      SELECT nx.queue, nx.ordering_key FROM waiting AS k CROSS JOIN LATERAL (
        SELECT w.queue, w.ordering_key FROM $tasks AS w
        WHERE w.ordering_key IS NOT NULL AND NOT w.head AND (w.queue, w.ordering_key) > (k.queue, k.ordering_key)
        ORDER BY w.queue, w.ordering_key LIMIT 1) AS nx
    )
    UPDATE $tasks AS t SET head = true
    WHERE NOT t.head AND t.id = ANY(ARRAY(
      SELECT (SELECT e.id FROM $tasks AS e
              WHERE e.queue = k.queue AND e.ordering_key = k.ordering_key
              ORDER BY e.id LIMIT 1)
      FROM waiting AS k))
    RETURNING t.queue""").query[String].to[Vector]

  // ---- queries

  /** Tasks of `queue` not finished (available or running anywhere). */
  def unfinished(queue: String): ConnectionIO[Long] =
    (const(s"SELECT count(*) FROM $tasks WHERE queue = ") ++ fr0"$queue").query[Long].unique

object Sql:

  /**
   * What a beat found among the claims it was given: the tokens no running task holds any more (`gone`),
   * and those whose cancel was requested, with the reason (`cancels`).
   */
  final case class Beat(gone: Vector[Long], cancels: Vector[(Long, String)])

  object Beat:
    def of(rows: Vector[(Long, Option[String])]): Beat =
      Beat(
        rows.collect { case (token, None) => token },
        rows.collect { case (token, Some(why)) => token -> why }
      )

  /**
   * A task ready for the database: payload as JSON text, run-at as a delay from the server's now, headers as
   * a JSON object's text or `None` (stored as NULL).
   */
  final case class EncodedTask(
      payload: String,
      priority: Int,
      delayMillis: Long,
      maxAttempts: Int,
      orderingKey: Option[String],
      uniqueKey: Option[String],
      headers: Option[String]
  )

  /**
   * What a claim gave: its tasks, and what the queue's controls said, if it has any (`None`: it has none,
   * and a claim is held back only by the tasks there are).
   */
  final case class Claim(rows: Vector[Claimed], control: Option[Control])

  object Claim:
    val empty: Claim = Claim(Vector.empty, None)

    /** The tasks' rows, and the controls' row that follows them for a queue with a control. */
    def of(rows: Vector[ClaimRow]): Claim =
      val tasks = Vector.newBuilder[Claimed]
      var control: Option[Control] = None
      rows.foreach { r =>
        r.id match
          case Some(id) =>
            tasks += Claimed(
              id,
              r.token.getOrElse(0L),
              r.attempt.getOrElse(0),
              r.maxAttempts.getOrElse(0),
              r.priority.getOrElse(0),
              r.orderingKey,
              r.payload.getOrElse(""),
              r.createdAtMicros.getOrElse(0L),
              r.headers
            )
          case None => control = Some(Control(r.limited.getOrElse(false), r.heldBackMillis))
      }
      Claim(tasks.result(), control)

  /**
   * What a queue's controls did to a claim: `limited`, the queue has a limit on running tasks (finishing
   * one of its tasks should wake its claimers); `heldBackMillis`, whether they held the claim back:
   * `None`, no; `Some(-1)`, until a task of the queue finishes or the controls change; `Some(n)`, until the
   * rate's next token, `n` ms from now.
   */
  final case class Control(limited: Boolean, heldBackMillis: Option[Long])

  /** A row of the claim function, a task's or the controls'. */
  final case class ClaimRow(
      id: Option[Long],
      token: Option[Long],
      attempt: Option[Int],
      maxAttempts: Option[Int],
      priority: Option[Int],
      orderingKey: Option[String],
      payload: Option[String],
      createdAtMicros: Option[Long],
      headers: Option[String],
      limited: Option[Boolean],
      heldBackMillis: Option[Long]
  )

  /** A claimed row, its payload and headers not yet decoded. */
  final case class Claimed(
      id: Long,
      token: Long,
      attempt: Int,
      maxAttempts: Int,
      priority: Int,
      orderingKey: Option[String],
      payload: String,
      createdAtMicros: Long,
      headers: Option[String]
  ):
    def createdAt: Instant =
      Instant.ofEpochSecond(
        Math.floorDiv(createdAtMicros, 1000000L),
        Math.floorMod(createdAtMicros, 1000000L) * 1000L
      )
