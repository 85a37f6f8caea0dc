package weir.postgres.internal

import doobie.*
import doobie.implicits.*
import cats.syntax.all.*
import doobie.postgres.implicits.*
import weir.postgres.{FinishedState, QueueDepth, QueueInfo, QueueRate, QueueStats, Schema, WorkerInfo}

/**
 * The statements of [[weir.postgres.Overview]] and of the prune of finished tasks, for one schema; the
 * actions' are in [[ActionSql]] and [[ControlSql]].
 */
private[postgres] final class AdminSql(schema: Schema):

  private val tasks = schema("tasks")
  private val finished = schema("finished")
  private val workersTable = schema("workers")
  private val queues = schema("queues")
  private def const(s: String): Fragment = Fragment.const0(s)

  /** The audit log's statements, which every action's transaction writes to. */
  val audit: AuditSql = new AuditSql(schema)

  // a waiting task claimable from `waiting`: its one parent completed (migration 18)
  private val ready = TaskStateSql.ready(schema, "t")

  def stats: ConnectionIO[Vector[QueueStats]] =
    const(s"""WITH live AS (
      SELECT queue,
             count(*) FILTER (WHERE claimable AND run_at <= now()) AS available,
             count(*) FILTER (WHERE claimable AND run_at > now()) AS scheduled,
             count(*) FILTER (WHERE state = 'running') AS running
      FROM (SELECT t.queue, t.state, t.run_at,
                   t.state = 'available' OR (t.state = 'waiting' AND $ready) AS claimable
            FROM $tasks AS t) AS t
      GROUP BY queue
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
   * waited); those behind an earlier task of their key from `tasks_waiting`, and the other tasks waiting
   * for their parents from `tasks_waiting_for_parents` (those whose one parent completed, which a claim takes
   * from `waiting`, counted as available or scheduled); the running ones from
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
      UNION ALL SELECT queue, 0, 0, count(*), 0, 0, 0, 0, NULL FROM $tasks AS t
        WHERE parents_left > 0 AND (ordering_key IS NULL OR head) AND NOT $ready
        GROUP BY queue
      UNION ALL SELECT queue, count(*) FILTER (WHERE run_at <= now()), count(*) FILTER (WHERE run_at > now()), 0, 0,
             0, 0, 0, extract(epoch FROM now() - min(run_at) FILTER (WHERE run_at <= now()))::float8
      FROM $tasks AS t WHERE parents_left > 0 AND $ready GROUP BY queue
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

  def prune(olderThanMillis: Long, states: Array[String], batch: Int): ConnectionIO[Int] =
    (const(s"""DELETE FROM $finished WHERE id = ANY(ARRAY(
      SELECT id FROM $finished
      WHERE finished_at < now() - """) ++ fr0"$olderThanMillis" ++
      const(" * interval '1 millisecond' AND state::text = ANY(") ++
      fr0"$states" ++ const(") LIMIT ") ++ fr0"$batch" ++ const(" FOR UPDATE SKIP LOCKED))")).update.run

  /**
   * Whether the schema has batches (migration 13): a worker may run against a schema of the release before,
   * whose prune must not name the table.
   */
  def hasBatches: ConnectionIO[Boolean] =
    sql"SELECT to_regclass(${schema("batches")}) IS NOT NULL".query[Boolean].unique

  /**
   * Deletes up to `batch` batches that ended more than `olderThanMillis` ago and whose callback has left
   * `tasks` (finished, or cancelled), skipping rows another prune holds; returns how many.
   */
  def pruneBatches(olderThanMillis: Long, batch: Int): ConnectionIO[Int] =
    val batches = schema("batches")
    (const(s"""DELETE FROM $batches WHERE id = ANY(ARRAY(
      SELECT b.id FROM $batches AS b
      WHERE b.ended_at < now() - """) ++ fr0"$olderThanMillis" ++
      const(s""" * interval '1 millisecond'
        AND NOT EXISTS (SELECT 1 FROM $tasks AS t WHERE t.id = b.callback)
      LIMIT """) ++ fr0"$batch" ++ const(" FOR UPDATE SKIP LOCKED))")).update.run

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
