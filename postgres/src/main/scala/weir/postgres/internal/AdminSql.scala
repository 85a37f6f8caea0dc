package weir.postgres.internal

import doobie.*
import doobie.implicits.*
import cats.syntax.all.*
import doobie.postgres.implicits.*
import weir.postgres.{Cancel, FinishedState, QueueDepth, QueueInfo, QueueRate, QueueStats, Schema, WorkerInfo}

/** The statements behind [[weir.postgres.TaskAdmin]], for one schema. */
private[postgres] final class AdminSql(schema: Schema):

  private val tasks = schema("tasks")
  private val finished = schema("finished")
  private val workersTable = schema("workers")
  private val queues = schema("queues")
  private val sql = new Sql(schema)
  private def const(s: String): Fragment = Fragment.const0(s)

  /** The audit log's statements, which every action's transaction writes to. */
  val audit: AuditSql = new AuditSql(schema)

  /** The queue and state of the task `id`, live or finished; `None` when there is none. */
  def task(id: Long): ConnectionIO[Option[(String, String)]] =
    (const(s"SELECT queue, state::text FROM $tasks WHERE id = ") ++ fr0"$id" ++
      const(s" UNION ALL SELECT queue, state::text FROM $finished WHERE id = ") ++ fr0"$id" ++
      const(" LIMIT 1"))
      .query[(String, String)].option

  def stats: ConnectionIO[Vector[QueueStats]] =
    const(s"""WITH live AS (
      SELECT queue,
             count(*) FILTER (WHERE state = 'available' AND run_at <= now()) AS available,
             count(*) FILTER (WHERE state = 'available' AND run_at > now()) AS scheduled,
             count(*) FILTER (WHERE state = 'running') AS running
      FROM $tasks GROUP BY queue
    ), done AS (
      SELECT queue,
             count(*) FILTER (WHERE state = 'completed') AS completed,
             count(*) FILTER (WHERE state = 'dead') AS dead,
             count(*) FILTER (WHERE state = 'cancelled') AS cancelled
      FROM $finished GROUP BY queue
    )
    SELECT coalesce(live.queue, done.queue),
           coalesce(available, 0), coalesce(scheduled, 0), coalesce(running, 0),
           coalesce(completed, 0), coalesce(dead, 0), coalesce(cancelled, 0)
    FROM live FULL JOIN done ON live.queue = done.queue
    ORDER BY 1""").query[QueueStats].to[Vector]

  /** The transaction's time, which every `now()` of its statements reads. */
  def now: ConnectionIO[java.time.Instant] = const("SELECT now()").query[java.time.Instant].unique

  /**
   * Each queue's tasks by state in one statement (one snapshot), as the console counts its live ones: the
   * tasks a claim may take, split by due time, from `tasks_claim` (with how long the oldest due one has
   * waited); those behind an earlier task of their key from `tasks_waiting`; the running ones from
   * `tasks_running`; and the finished ones in `finished` (those counted, none when empty) from `finished_by_state`. Each
   * part reads its index and nothing else while the table's pages are all-visible, so a count costs what
   * it counts: the backlog, plus the history kept in the finished states asked for.
   */
  def depths(counted: Vector[FinishedState]): ConnectionIO[Vector[QueueDepth]] =
    val live = const(
      s"""SELECT queue, count(*) FILTER (WHERE run_at <= now()), count(*) FILTER (WHERE run_at > now()), 0, 0,
             0, 0, 0, extract(epoch FROM now() - min(run_at) FILTER (WHERE run_at <= now()))::float8
      FROM $tasks WHERE state = 'available' AND (ordering_key IS NULL OR head) GROUP BY queue
      UNION ALL SELECT queue, 0, 0, count(*), 0, 0, 0, 0, NULL FROM $tasks
        WHERE ordering_key IS NOT NULL AND NOT head GROUP BY queue
      UNION ALL SELECT queue, 0, 0, 0, count(*), 0, 0, 0, NULL FROM $tasks WHERE state = 'running' GROUP BY queue"""
    )
    val done =
      if counted.isEmpty then Fragment.empty
      else
        val states = counted.map(s => fr0"${s.name}::" ++ const(schema("finished_state")))
        const(s"""
      UNION ALL SELECT queue, 0, 0, 0, 0, count(*) FILTER (WHERE state = 'completed'),
             count(*) FILTER (WHERE state = 'dead'), count(*) FILTER (WHERE state = 'cancelled'), NULL
      FROM $finished WHERE state IN (""") ++ states.reduce(_ ++ const(", ") ++ _) ++ const(") GROUP BY queue")
    (live ++ done)
      .query[(String, Long, Long, Long, Long, Long, Long, Long, Option[Double])]
      .to[Vector]
      .map(rows => QueueDepth.sum(rows, counted.toSet))

  def workers: ConnectionIO[Vector[WorkerInfo]] =
    const(s"""SELECT w.id, w.name, w.started_at, w.heartbeat_at,
             w.session_since > pg_postmaster_start_time() AND EXISTS (
               SELECT 1 FROM pg_locks AS l
               WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                 AND l.classid = ${schema.sessionLockClass} AND l.objid = w.id % 2147483648),
             (SELECT count(*) FROM $tasks AS t WHERE t.state = 'running' AND t.lease_owner = w.id)
      FROM $workersTable AS w ORDER BY w.id""").query[WorkerInfo].to[Vector]

  /**
   * Cancels the task `id` for `reason`, under its row's lock, so that no finish or claim changes it
   * meanwhile: an available one moves to `finished` as cancelled; a running one gets the request, and its
   * worker is told (see [[weir.postgres.TaskActions.cancel]]); a finished one is left as it is.
   */
  def cancel(id: Long, reason: String): ConnectionIO[Cancel] =
    (const(s"SELECT state::text FROM $tasks WHERE id = ") ++ fr0"$id" ++ const(" FOR UPDATE"))
      .query[String].option.flatMap {
        case Some("available") => cancelAvailable(id, reason).as(Cancel.Cancelled)
        case Some(_) => requestCancel(id, reason).as(Cancel.Requested)
        case None =>
          (const(s"SELECT state::text FROM $finished WHERE id = ") ++ fr0"$id").query[String].option.map(
            _.fold(Cancel.NotFound)(state => Cancel.Finished(FinishedState.valueOf(state.capitalize)))
          )
      }

  private def cancelAvailable(id: Long, reason: String): ConnectionIO[Int] =
    (const(s"""WITH c AS (DELETE FROM $tasks WHERE id = """) ++ fr0"$id" ++
      const(
        s""" AND state = 'available' RETURNING *)
    , moved AS (
      INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts, ordering_key, unique_key, errors, created_at, headers)
      SELECT id, queue, payload, priority, 'cancelled', attempt, max_attempts, ordering_key, unique_key,
             errors || jsonb_build_array(jsonb_build_object('attempt', attempt, 'at', now(), 'error', 'cancelled: ' || """
      ) ++
      fr0"$reason" ++ const("""::text)), created_at, headers FROM c
      RETURNING 1)""") ++ sql.nextHeads("c") ++ const("""
    SELECT count(*)::int FROM moved""")).query[Int].unique

  /**
   * Records the cancel of the running task `id` and tells its worker at commit, on the cancel channel: the
   * claim's lease token, a space, the reason (cut to fit a notification's payload; the row keeps it whole).
   */
  private def requestCancel(id: Long, reason: String): ConnectionIO[Int] =
    (const(s"WITH r AS (UPDATE $tasks SET cancel_requested = ") ++ fr0"$reason" ++ const(" WHERE id = ") ++
      fr0"$id" ++ const(s""" AND state = 'running' RETURNING lease_token)
    SELECT count(pg_notify('${schema.cancelChannel}', lease_token || ' ' || left(""") ++ fr0"$reason" ++
      const(", 1000)))::int FROM r")).query[Int].unique

  /**
   * Copies a dead or cancelled task back (fresh attempts), then deletes its finished row and wakes its
   * queue if that worked.
   */
  def retry(id: Long): ConnectionIO[Boolean] =
    (const(s"""INSERT INTO $tasks AS t (id, queue, payload, priority, run_at, max_attempts, ordering_key, unique_key, errors, created_at, headers)
      SELECT id, queue, payload, priority, now(), max_attempts, ordering_key, unique_key, errors, created_at, headers
      FROM $finished WHERE state IN ('dead', 'cancelled') AND id = """) ++ fr0"$id" ++ const("""
      ON CONFLICT (queue, unique_key) WHERE unique_key IS NOT NULL DO NOTHING
      RETURNING t.queue""")).query[String].option.flatMap {
      case None => FC.pure(false)
      case Some(queue) =>
        (const(s"DELETE FROM $finished WHERE id = ") ++ fr0"$id").update.run *> sql.wakeQueue(queue).as(true)
    }

  def discard(id: Long): ConnectionIO[Boolean] =
    (const(s"DELETE FROM $finished WHERE state IN ('dead', 'cancelled') AND id = ") ++
      fr0"$id").update.run.map(_ == 1)

  def prune(olderThanMillis: Long, states: Array[String], batch: Int): ConnectionIO[Int] =
    (const(s"""DELETE FROM $finished WHERE id = ANY(ARRAY(
      SELECT id FROM $finished
      WHERE finished_at < now() - """) ++ fr0"$olderThanMillis" ++
      const(" * interval '1 millisecond' AND state::text = ANY(") ++
      fr0"$states" ++ const(") LIMIT ") ++ fr0"$batch" ++ const(" FOR UPDATE SKIP LOCKED))")).update.run

  // ---- queue controls

  /** Every queue with a row of controls, by name, with its running tasks. */
  def queueInfos: ConnectionIO[Vector[QueueInfo]] =
    const(s"""SELECT q.name, q.paused, q.max_running, q.rate_per_second, q.rate_burst,
             (SELECT count(*) FROM $tasks AS t WHERE t.queue = q.name AND t.state = 'running'), q.updated_at
      FROM $queues AS q ORDER BY q.name""")
      .query[(String, Boolean, Option[Int], Option[Double], Option[Int], Long, java.time.Instant)]
      .map { (name, paused, maxRunning, perSecond, burst, running, updatedAt) =>
        QueueInfo(name, paused, maxRunning, (perSecond, burst).mapN(QueueRate(_, _)), running, updatedAt)
      }
      .to[Vector]

  def addQueue(queue: String): ConnectionIO[Int] = sql.addQueue(queue)

  /** Wakes the queue's workers at commit: a changed control may let them claim. */
  def wakeQueue(queue: String): ConnectionIO[Unit] = sql.wakeQueue(queue)

  /**
   * Whether `queue` is known: it has a row of controls, or tasks, finished ones included. A `CASE` so that
   * the row, the usual answer, spares the scans of the tasks; the finished states are named so that the
   * search is an index probe per state.
   */
  def known(queue: String): ConnectionIO[Boolean] =
    (const(s"SELECT CASE WHEN EXISTS (SELECT 1 FROM $queues WHERE name = ") ++ fr0"$queue" ++
      const(s") THEN true ELSE EXISTS (SELECT 1 FROM $tasks WHERE queue = ") ++ fr0"$queue" ++
      const(
        s") OR EXISTS (SELECT 1 FROM $finished WHERE state IN ('completed', 'dead', 'cancelled') AND queue = "
      ) ++
      fr0"$queue" ++ const(") END"))
      .query[Boolean].unique

  def setPaused(queue: String, paused: Boolean): ConnectionIO[Int] =
    (const(s"INSERT INTO $queues AS q (name, paused) VALUES (") ++ fr0"$queue, $paused" ++
      const(") ON CONFLICT (name) DO UPDATE SET paused = EXCLUDED.paused, updated_at = now()")).update.run

  def setMaxRunning(queue: String, max: Option[Int]): ConnectionIO[Int] =
    (const(s"INSERT INTO $queues AS q (name, max_running) VALUES (") ++ fr0"$queue, $max" ++
      const(") ON CONFLICT (name) DO UPDATE SET max_running = EXCLUDED.max_running, updated_at = now()"))
      .update.run

  /**
   * Sets or removes the rate. A new rate starts with a full burst; a changed one keeps the tokens the old
   * one had gathered by now, up to the new burst, so that changing a rate never hands out a fresh burst.
   */
  def setRate(queue: String, rate: Option[QueueRate]): ConnectionIO[Int] =
    val perSecond = rate.map(_.perSecond)
    val burst = rate.map(_.burst)
    (const(s"INSERT INTO $queues AS q (name, rate_per_second, rate_burst, tokens, tokens_at) VALUES (") ++
      fr0"$queue, $perSecond, $burst, coalesce($burst, 0), clock_timestamp()" ++
      const(""") ON CONFLICT (name) DO UPDATE SET
        rate_per_second = EXCLUDED.rate_per_second, rate_burst = EXCLUDED.rate_burst,
        tokens = CASE WHEN q.rate_per_second IS NULL OR EXCLUDED.rate_per_second IS NULL THEN EXCLUDED.tokens
                      ELSE least(EXCLUDED.rate_burst::double precision, q.tokens + q.rate_per_second *
                             greatest(0, extract(epoch FROM clock_timestamp() - q.tokens_at))) END,
        tokens_at = clock_timestamp(), updated_at = now()""")).update.run
