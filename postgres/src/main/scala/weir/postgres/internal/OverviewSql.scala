package weir.postgres.internal

import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.postgres.{FinishedPerMinute, Schema, TaskState}
import weir.postgres.internal.TaskStateSql.given

/**
 * The statements behind [[weir.postgres.QueueOverview]], for one schema: each queue's counts by state, in
 * two reads ([[live]] and [[finishedCapped]]) meant to run at once on two connections, and the tasks
 * finished per minute.
 */
private[postgres] final class OverviewSql(schema: Schema) extends SqlBase(schema):
  import OverviewSql.*
  import TaskState.*

  // a waiting task claimable from `waiting`: its one parent completed (migration 18)
  private val ready = TaskStateSql.ready(schema, "t")

  /**
   * Every queue with live tasks (or `only` that one), and their counts, exact, with how long its oldest
   * task ready to run has waited, in seconds. Each count reads one of the claim's partial indexes and
   * nothing else, as long as the table's pages are all-visible (the visibility map; a vacuumed backlog
   * is): the tasks a claim may take, split by due time, from `tasks_claim`; those behind an earlier task
   * of their key from `tasks_waiting`, and the other tasks waiting for their parents from
   * `tasks_waiting_for_parents` (those whose one parent completed, which a claim takes from `waiting`, read
   * from their rows and counted as available or scheduled); the running ones from `tasks_running`.
   */
  def live(only: Option[String]): ConnectionIO[Vector[LiveCounts]] =
    val queue = only.fold(Fragment.empty)(q => fr0" AND queue = $q")
    withoutParallelWorkers *>
      (const(
        s"""SELECT queue, count(*) FILTER (WHERE run_at <= now()), count(*) FILTER (WHERE run_at > now()), 0, 0,
             extract(epoch FROM now() - min(run_at) FILTER (WHERE run_at <= now()))::float8
      FROM $tasks WHERE state = '${Available.name}' AND (ordering_key IS NULL OR head)"""
      ) ++ queue ++ const(
        s""" GROUP BY queue
      UNION ALL SELECT queue, 0, 0, count(*), 0, NULL FROM $tasks WHERE ordering_key IS NOT NULL AND NOT head"""
      ) ++
        queue ++ const(
          s""" GROUP BY queue
      UNION ALL SELECT queue, 0, 0, count(*), 0, NULL FROM $tasks AS t
        WHERE parents_left > 0 AND (ordering_key IS NULL OR head) AND NOT $ready"""
        ) ++
        queue ++ const(s""" GROUP BY queue
      UNION ALL SELECT queue, count(*) FILTER (WHERE run_at <= now()), count(*) FILTER (WHERE run_at > now()), 0, 0,
             extract(epoch FROM now() - min(run_at) FILTER (WHERE run_at <= now()))::float8
      FROM $tasks AS t WHERE parents_left > 0 AND $ready""") ++
        queue ++ const(s""" GROUP BY queue
      UNION ALL SELECT queue, 0, 0, 0, count(*), NULL FROM $tasks WHERE state = '${Running.name}'""") ++
        queue ++
        const(" GROUP BY queue")).query[LiveCounts].to[Vector].map(LiveCounts.of)

  /**
   * Every queue with finished tasks (or `only` that one), and their count per state up to `cap + 1`: a
   * history of any length costs at most that many index entries per queue and state. The queues are found
   * by a skip scan of `finished_by_state`, one index probe per state and queue, not a pass over the history.
   */
  def finishedCapped(cap: Int, only: Option[String]): ConnectionIO[Vector[(String, TaskState, Long)]] =
    val pairs = only match
      case None => const(s"""WITH RECURSIVE pairs AS (
        (SELECT state, queue FROM $finished ORDER BY state, queue LIMIT 1)
        UNION ALL
        SELECT n.state, n.queue FROM pairs AS p CROSS JOIN LATERAL (
          SELECT f.state, f.queue FROM $finished AS f WHERE (f.state, f.queue) > (p.state, p.queue)
          ORDER BY f.state, f.queue LIMIT 1) AS n)""")
      case Some(q) => const(s"WITH pairs AS (SELECT s.state, ") ++ fr0"$q::text" ++
          const(s" AS queue FROM unnest(enum_range(NULL::${schema("finished_state")})) AS s(state))")
    withoutParallelWorkers *>
      (pairs ++ const(s"""
      SELECT * FROM (SELECT p.queue, p.state::text, (SELECT count(*) FROM (
        SELECT 1 FROM $finished AS f WHERE f.state = p.state AND f.queue = p.queue LIMIT """) ++
        fr0"${cap + 1}" ++ const(") AS c) AS n FROM pairs AS p) AS counts WHERE n > 0"))
        .query[(String, TaskState, Long)].to[Vector]

  /**
   * The counts' reads run at once, each on a connection of its own: PostgreSQL's parallel workers for
   * either would only compete with the other for the same cores.
   */
  private val withoutParallelWorkers: ConnectionIO[Int] =
    const("SET LOCAL max_parallel_workers_per_gather = 0").update.run

  /** Tasks completed and dead per minute over the last hour, of one queue or all, oldest minute first. */
  def throughput(queue: Option[String]): ConnectionIO[Vector[FinishedPerMinute]] =
    (const(s"""SELECT date_trunc('minute', finished_at), count(*) FILTER (WHERE state = '${Completed.name}'),
             count(*) FILTER (WHERE state = '${Dead.name}')
      FROM $finished WHERE finished_at >= date_trunc('minute', now()) - interval '59 minutes'""") ++
      queue.fold(Fragment.empty)(q => fr0" AND queue = $q") ++ const(" GROUP BY 1 ORDER BY 1"))
      .query[FinishedPerMinute].to[Vector]

private[postgres] object OverviewSql:

  /** A queue's live tasks by state, and how long its oldest task ready to run has waited, in seconds. */
  final case class LiveCounts(
      queue: String,
      available: Long,
      scheduled: Long,
      waiting: Long,
      running: Long,
      oldestSeconds: Option[Double]
  )

  object LiveCounts:
    /** The counts of each queue in `parts` (one per index read), added up. */
    def of(parts: Vector[LiveCounts]): Vector[LiveCounts] =
      parts.groupBy(_.queue).toVector.map { (queue, ps) =>
        LiveCounts(
          queue,
          available = ps.map(_.available).sum,
          scheduled = ps.map(_.scheduled).sum,
          waiting = ps.map(_.waiting).sum,
          running = ps.map(_.running).sum,
          oldestSeconds = ps.flatMap(_.oldestSeconds).maxOption
        )
      }
