package weir.postgres.internal

import doobie.*
import doobie.implicits.*
import cats.syntax.all.*
import doobie.postgres.implicits.*
import weir.postgres.{QueueStats, Schema, WorkerInfo}

/** The statements behind [[weir.postgres.TaskAdmin]], for one schema. */
private[postgres] final class AdminSql(schema: Schema):

  private val tasks = schema("tasks")
  private val finished = schema("finished")
  private val workersTable = schema("workers")
  private val sql = new Sql(schema)
  private def const(s: String): Fragment = Fragment.const0(s)

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

  def workers: ConnectionIO[Vector[WorkerInfo]] =
    const(s"""SELECT w.id, w.name, w.started_at, w.heartbeat_at,
             w.session_since > pg_postmaster_start_time() AND EXISTS (
               SELECT 1 FROM pg_locks AS l
               WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                 AND l.classid = ${schema.sessionLockClass} AND l.objid = w.id % 2147483648),
             (SELECT count(*) FROM $tasks AS t WHERE t.state = 'running' AND t.lease_owner = w.id)
      FROM $workersTable AS w ORDER BY w.id""").query[WorkerInfo].to[Vector]

  def cancel(id: Long): ConnectionIO[Boolean] =
    (const(s"""WITH c AS (DELETE FROM $tasks WHERE id = """) ++ fr0"$id" ++
      const(s""" AND state = 'available' RETURNING *)
    , moved AS (
      INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts, ordering_key, unique_key, errors, created_at, headers)
      SELECT id, queue, payload, priority, 'cancelled', attempt, max_attempts, ordering_key, unique_key, errors, created_at, headers FROM c
      RETURNING 1)""") ++ sql.nextHeads("c") ++ const("""
    SELECT count(*) = 1 FROM moved""")).query[Boolean].unique

  def isRunning(id: Long): ConnectionIO[Boolean] =
    (const(s"SELECT EXISTS (SELECT 1 FROM $tasks WHERE state = 'running' AND id = ") ++ fr0"$id)").query[
      Boolean
    ].unique

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
