package weir.console.internal

import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.postgres.Schema

import java.time.Instant

/**
 * The console's reads, for one schema: what [[weir.postgres.TaskAdmin]] does not answer (task lists and
 * details, keys, throughput). Each is one statement whose cost is bounded by its `LIMIT` or by an index
 * range: the task list pages by keyset, never by `OFFSET`. Actions never go through here.
 */
private[console] final class ConsoleQueries(schema: Schema):
  import ConsoleQueries.*

  private val tasks = schema("tasks")
  private val finished = schema("finished")
  private def const(s: String): Fragment = Fragment.const0(s)

  /** A live task's state as the console names it: an available task due later is `scheduled`. */
  private val liveState =
    "CASE WHEN t.state = 'available' AND t.run_at > now() THEN 'scheduled' ELSE t.state::text END"

  /** Per queue, how long its oldest task ready to run has waited, in seconds. */
  def oldestAvailable: ConnectionIO[Map[String, Double]] =
    const(s"""SELECT queue, extract(epoch FROM now() - min(run_at))::float8 FROM $tasks
      WHERE state = 'available' AND run_at <= now() GROUP BY queue""").query[(
        String,
        Double
    )].to[Vector].map(_.toMap)

  /** Tasks completed and dead per minute over the last hour, of one queue or all, oldest minute first. */
  def throughput(queue: Option[String]): ConnectionIO[Vector[Minute]] =
    (const(s"""SELECT date_trunc('minute', finished_at), count(*) FILTER (WHERE state = 'completed'),
             count(*) FILTER (WHERE state = 'dead')
      FROM $finished WHERE finished_at >= date_trunc('minute', now()) - interval '59 minutes'""") ++
      queue.fold(Fragment.empty)(q => fr0" AND queue = $q") ++ const(" GROUP BY 1 ORDER BY 1"))
      .query[Minute].to[Vector]

  /**
   * At most `limit` tasks matching `f`, newest first by `f.sort`, after `f.after`. Live tasks come from
   * `tasks` and finished ones from `finished`; each side is limited before the union, so each reads no more
   * than a page.
   */
  def taskPage(f: TaskFilter, limit: Int): ConnectionIO[Vector[TaskRow]] =
    val live = Option.when(f.sort == TaskSort.Enqueued && f.state.forall(_.live))(
      side(
        f,
        limit,
        from = s"$tasks AS t",
        state = liveState,
        at = "t.created_at",
        finishedAt = "NULL::timestamptz"
      )
    )
    val done = Option.when(f.state.forall(!_.live)) {
      val at = if f.sort == TaskSort.Finished then "t.finished_at" else "t.created_at"
      side(f, limit, from = s"$finished AS t", state = "t.state::text", at = at, finishedAt = "t.finished_at")
    }
    val sides = Vector(live, done).flatten
    if sides.isEmpty then FC.pure(Vector.empty)
    else
      (const(
        "SELECT id, queue, state, priority, ordering_key, attempt, max_attempts, created_at, finished_at, payload FROM ("
      ) ++
        sides.map(s => const("(") ++ s ++ const(")")).reduceLeft(_ ++ const(" UNION ALL ") ++ _) ++
        const(") AS page ORDER BY at DESC, id DESC LIMIT ") ++ fr0"$limit").query[TaskRow].to[Vector]

  private def side(
      f: TaskFilter,
      limit: Int,
      from: String,
      state: String,
      at: String,
      finishedAt: String
  ): Fragment =
    val conditions = Vector(
      f.queue.map(q => fr0"t.queue = $q"),
      f.state.map(s => const(s"$state = ") ++ fr0"${s.name}"),
      f.key.map(k => fr0"t.ordering_key = $k"),
      f.priority.map(p => fr0"t.priority = ${p.toShort}"),
      f.from.map(t => const(s"$at >= ") ++ fr0"$t"),
      f.to.map(t => const(s"$at < ") ++ fr0"$t"),
      f.text.map(s => fr0"strpos(lower(t.payload::text), lower($s)) > 0"),
      f.after.map(c => const(s"($at, t.id) < (") ++ fr0"${instantOf(c.micros)}, ${c.id}" ++ const(")"))
    ).flatten
    const(s"""SELECT t.id, t.queue, $state AS state, t.priority, t.ordering_key, t.attempt, t.max_attempts,
             t.created_at, $finishedAt AS finished_at, t.payload::text AS payload, $at AS at
      FROM $from""") ++
      (if conditions.isEmpty then Fragment.empty
       else const(" WHERE ") ++ conditions.reduceLeft(_ ++ const(" AND ") ++ _)) ++
      const(s" ORDER BY $at DESC, t.id DESC LIMIT ") ++ fr0"$limit"

  /** The task `id`, live or finished. */
  def task(id: Long): ConnectionIO[Option[TaskDetail]] =
    (const(s"""SELECT t.id, t.queue, $liveState, t.priority, t.ordering_key, t.unique_key, t.attempt,
             t.max_attempts, t.created_at, t.run_at, NULL::timestamptz, t.lease_owner, t.cancel_requested,
             t.payload::text, t.headers::text, t.errors::text
      FROM $tasks AS t WHERE t.id = """) ++ fr0"$id" ++
      const(s"""
      UNION ALL
      SELECT f.id, f.queue, f.state::text, f.priority, f.ordering_key, f.unique_key, f.attempt, f.max_attempts,
             f.created_at, NULL::timestamptz, f.finished_at, NULL::bigint, NULL::text, f.payload::text,
             f.headers::text, f.errors::text
      FROM $finished AS f WHERE f.id = """) ++ fr0"$id" ++ const(" LIMIT 1"))
      .query[TaskDetail].option

  /**
   * The tasks of `key` in `queue` around the task `id`: up to `n` before it (they run first) and `n` after
   * it, in the order they will run (the key's order is its ids' order). Finished tasks have left the key.
   */
  def neighbours(
      queue: String,
      key: String,
      id: Long,
      n: Int
  ): ConnectionIO[(Vector[Neighbour], Vector[Neighbour])] =
    def around(op: String, order: String) =
      (const(s"SELECT t.id, $liveState, t.attempt, t.created_at FROM $tasks AS t WHERE t.queue = ") ++
        fr0"$queue" ++ const(" AND t.ordering_key = ") ++ fr0"$key" ++ const(s" AND t.id $op ") ++ fr0"$id" ++
        const(s" ORDER BY t.id $order LIMIT ") ++ fr0"$n").query[Neighbour].to[Vector]
    (around("<", "DESC").map(_.reverse), around(">", "ASC")).tupled

  /**
   * Keys with tasks waiting, at most `limit`: each one's backlog and head (the task that runs next). A key
   * is blocked when its head has failed at least once and others wait behind it; blocked keys come first,
   * then the longest waiting heads.
   */
  def keys(limit: Int): ConnectionIO[Vector[KeyRow]] = (const(s"""WITH k AS (
        SELECT queue, ordering_key, min(id) AS head, count(*) AS backlog
        FROM $tasks WHERE ordering_key IS NOT NULL GROUP BY queue, ordering_key)
      SELECT k.queue, k.ordering_key, k.backlog, t.id, $liveState, t.attempt, t.created_at,
             jsonb_array_length(t.errors) > 0 AND k.backlog > 1 AS blocked
      FROM k JOIN $tasks AS t ON t.id = k.head
      ORDER BY blocked DESC, t.created_at, t.id LIMIT """) ++ fr0"$limit").query[KeyRow].to[Vector]

private[console] object ConsoleQueries:

  final case class Minute(at: Instant, completed: Long, dead: Long)

  final case class TaskRow(
      id: Long,
      queue: String,
      state: String,
      priority: Int,
      key: Option[String],
      attempt: Int,
      maxAttempts: Int,
      createdAt: Instant,
      finishedAt: Option[Instant],
      payload: String
  )

  final case class TaskDetail(
      id: Long,
      queue: String,
      state: String,
      priority: Int,
      key: Option[String],
      uniqueKey: Option[String],
      attempt: Int,
      maxAttempts: Int,
      createdAt: Instant,
      runAt: Option[Instant],
      finishedAt: Option[Instant],
      worker: Option[Long],
      cancelRequested: Option[String],
      payload: String,
      headers: Option[String],
      errors: String
  )

  final case class Neighbour(id: Long, state: String, attempt: Int, createdAt: Instant)

  final case class KeyRow(
      queue: String,
      key: String,
      backlog: Long,
      head: Long,
      headState: String,
      headAttempt: Int,
      headCreatedAt: Instant,
      blocked: Boolean
  )

  def instantOf(micros: Long): Instant =
    Instant.ofEpochSecond(Math.floorDiv(micros, 1000000L), Math.floorMod(micros, 1000000L) * 1000L)
