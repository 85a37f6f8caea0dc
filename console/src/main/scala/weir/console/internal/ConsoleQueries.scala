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

  /**
   * A live task's state as the console names it: an available task behind an earlier task of its key is
   * `waiting` (by its `head` mark, the hint the claim reads), and one due later is `scheduled`.
   */
  private val liveState =
    """CASE WHEN t.state = 'available' AND t.ordering_key IS NOT NULL AND NOT t.head THEN 'waiting'
      WHEN t.state = 'available' AND t.run_at > now() THEN 'scheduled' ELSE t.state::text END"""

  /**
   * Every queue with live tasks (or `only` that one), and their counts, exact, with how long its oldest
   * task ready to run has waited, in seconds. Each count reads one of the claim's partial indexes and
   * nothing else, as long as the table's pages are all-visible (the visibility map; a vacuumed backlog
   * is): the tasks a claim may take, split by due time, from `tasks_claim`; those behind an earlier task
   * of their key from `tasks_waiting`; the running ones from `tasks_running`.
   */
  def liveCounts(only: Option[String]): ConnectionIO[Vector[LiveCounts]] =
    val queue = only.fold(Fragment.empty)(q => fr0" AND queue = $q")
    withoutParallelWorkers *>
      (const(
        s"""SELECT queue, count(*) FILTER (WHERE run_at <= now()), count(*) FILTER (WHERE run_at > now()), 0, 0,
             extract(epoch FROM now() - min(run_at) FILTER (WHERE run_at <= now()))::float8
      FROM $tasks WHERE state = 'available' AND (ordering_key IS NULL OR head)"""
      ) ++ queue ++ const(
        s""" GROUP BY queue
      UNION ALL SELECT queue, 0, 0, count(*), 0, NULL FROM $tasks WHERE ordering_key IS NOT NULL AND NOT head"""
      ) ++
        queue ++ const(s""" GROUP BY queue
      UNION ALL SELECT queue, 0, 0, 0, count(*), NULL FROM $tasks WHERE state = 'running'""") ++ queue ++
        const(" GROUP BY queue")).query[LiveCounts].to[Vector].map(LiveCounts.of)

  /**
   * Every queue with finished tasks (or `only` that one), and their count per state up to `cap + 1`: a
   * history of any length costs at most that many index entries per queue and state. The queues are found
   * by a skip scan of `finished_by_state`, one index probe per state and queue, not a pass over the history.
   */
  def finishedCounts(cap: Int, only: Option[String]): ConnectionIO[Vector[(String, String, Long)]] =
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
        .query[(String, String, Long)].to[Vector]

  /**
   * The counts' reads run at once, each on a connection of its own ([[ConsoleRoutes]]): PostgreSQL's
   * parallel workers for either would only compete with the other for the same cores.
   */
  private val withoutParallelWorkers: ConnectionIO[Int] =
    const("SET LOCAL max_parallel_workers_per_gather = 0").update.run

  /** Tasks completed and dead per minute over the last hour, of one queue or all, oldest minute first. */
  def throughput(queue: Option[String]): ConnectionIO[Vector[Minute]] =
    (const(s"""SELECT date_trunc('minute', finished_at), count(*) FILTER (WHERE state = 'completed'),
             count(*) FILTER (WHERE state = 'dead')
      FROM $finished WHERE finished_at >= date_trunc('minute', now()) - interval '59 minutes'""") ++
      queue.fold(Fragment.empty)(q => fr0" AND queue = $q") ++ const(" GROUP BY 1 ORDER BY 1"))
      .query[Minute].to[Vector]

  /**
   * A page of at most `size` tasks matching `f`, newest first by `f.sort` (or oldest first), strictly after
   * `f.after`.
   *
   * Enqueue order is id order (ids are drawn as tasks are enqueued), so that both tables page by their
   * primary key; finish order is `(finished_at, id)`, through `finished_prune`, or through one range of
   * `finished_by_state` per state and queue when those are filtered. Each read is narrowed by what its
   * index answers; the rest of the filter (for live tasks all of it, the table holding the backlog only;
   * for finished ones a key, a priority, payload text, and in enqueue order a state or a queue) is checked
   * on at most `scan` tasks, the first ones after the position across both tables. When those hold too few
   * matches to fill the page, it ends where the scan stopped and says so ([[Page.scannedTo]]); the next page
   * goes on from there. So no page reads more than `scan` rows, however rare its matches.
   */
  def taskPage(f: TaskFilter, size: Int, scan: Int): ConnectionIO[Page] =
    val order = Order(byFinish = f.sort == TaskSort.Finished, oldest = f.oldest)
    val after = f.after.map(order.after).toVector
    val liveSide = Option.when(!order.byFinish && f.state.forall(_.live))(
      Side(
        s"$tasks AS t",
        liveState,
        "NULL::timestamptz",
        order,
        after,
        Vector(
          f.queue.map(q => fr0"t.queue = $q"),
          f.state.map(s => const(s"$liveState = ") ++ fr0"${s.name}"),
          f.from.map(t => fr0"t.created_at >= $t"),
          f.to.map(t => fr0"t.created_at < $t")
        ).flatten ++ anywhere(f)
      )
    )
    val finishedSides: ConnectionIO[Vector[Side]] =
      if f.state.exists(_.live) then FC.pure(Vector.empty)
      else if order.byFinish then
        val range = Vector(
          f.from.map(t => fr0"t.finished_at >= $t"),
          f.to.map(t => fr0"t.finished_at < $t")
        ).flatten ++ after
        if f.state.isEmpty && f.queue.isEmpty then
          FC.pure(Vector(Side(
            s"$finished AS t",
            "t.state::text",
            "t.finished_at",
            order,
            range,
            anywhere(f)
          )))
        else
          val states = f.state.fold(TaskState.values.toVector.filterNot(_.live))(Vector(_)).map(_.name)
          f.queue.fold(finishedQueues(states))(q => FC.pure(states.map(_ -> q))).map(_.map((state, queue) =>
            Side(
              s"$finished AS t",
              "t.state::text",
              "t.finished_at",
              order,
              Vector(fr0"t.state = $state::" ++ const(schema("finished_state")), fr0"t.queue = $queue") ++
                range,
              anywhere(f)
            )
          ))
      else
        // the time range stays with the index conditions: the planner reads it through `finished_created`
        // when it is narrow, and through the primary key, filtering, when it is wide
        val range = Vector(
          f.from.map(t => fr0"t.created_at >= $t"),
          f.to.map(t => fr0"t.created_at < $t")
        ).flatten ++ after
        val residual = Vector(
          f.queue.map(q => fr0"t.queue = $q"),
          f.state.map(s => fr0"t.state::text = ${s.name}")
        ).flatten ++ anywhere(f)
        FC.pure(Vector(Side(s"$finished AS t", "t.state::text", "t.finished_at", order, range, residual)))
    for
      history <- finishedSides
      sides = liveSide.toVector ++ history
      scanned = sides.filter(_.residual.nonEmpty)
      bound <- if scanned.isEmpty then FC.pure(None) else scanBound(order, scanned, scan)
      rows <-
        if sides.isEmpty then FC.pure(Vector.empty) else page(order, sides.map(_.within(bound)), size + 1)
    yield
      val shown = rows.take(size)
      if rows.size > size then Page(shown, Some(order.cursor(shown.last)), None)
      else Page(shown, bound, bound)

  /** The filters no index of either table answers. */
  private def anywhere(f: TaskFilter): Vector[Fragment] =
    Vector(
      f.key.map(k => fr0"t.ordering_key = $k"),
      f.priority.map(p => fr0"t.priority = ${p.toShort}"),
      f.text.map(s => fr0"strpos(lower(t.payload::text), lower($s)) > 0")
    ).flatten

  /** The queues with finished tasks in `states`, as (state, queue): a skip scan of `finished_by_state`. */
  private def finishedQueues(states: Vector[String]): ConnectionIO[Vector[(String, String)]] =
    states.flatTraverse { state =>
      val named = fr0"$state::" ++ const(schema("finished_state"))
      (const(s"WITH RECURSIVE qs AS ((SELECT queue FROM $finished WHERE state = ") ++ named ++
        const(s""" ORDER BY queue LIMIT 1)
          UNION ALL
          SELECT n.queue FROM qs CROSS JOIN LATERAL (
            SELECT f.queue FROM $finished AS f WHERE f.state = """) ++ named ++
        const(" AND f.queue > qs.queue ORDER BY f.queue LIMIT 1) AS n) SELECT queue FROM qs"))
        .query[String].to[Vector].map(_.map(state -> _))
    }

  /**
   * Where a scan of `scan` tasks of `sides` after the position, in the list's order, stops: the last of
   * them, when there are that many (fewer, and the scan reaches the end: no bound).
   */
  private def scanBound(order: Order, sides: Vector[Side], scan: Int): ConnectionIO[Option[Cursor]] =
    (const("WITH w AS (SELECT at, id FROM (") ++ union(sides.map(_.positions(scan))) ++
      const(s") AS u ORDER BY ${order.merged} LIMIT ") ++ fr0"$scan" ++
      const(s") SELECT at, id, (SELECT count(*) FROM w) FROM w ORDER BY ${order.mergedBackwards} LIMIT 1"))
      .query[(Option[Instant], Long, Long)].option
      .map(_.collect { case (at, id, n) if n >= scan => Cursor(at, id) })

  private def page(order: Order, sides: Vector[Side], limit: Int): ConnectionIO[Vector[TaskRow]] =
    (const(
      "SELECT id, queue, state, priority, ordering_key, attempt, max_attempts, created_at, finished_at, payload FROM ("
    ) ++ union(sides.map(_.rows(limit))) ++ const(s") AS page ORDER BY ${order.merged} LIMIT ") ++
      fr0"$limit")
      .query[TaskRow].to[Vector]

  private def union(parts: Vector[Fragment]): Fragment =
    parts.map(p => const("(") ++ p ++ const(")")).reduceLeft(_ ++ const(" UNION ALL ") ++ _)

  /** The list's order: by id (enqueue order), or by finish time then id; newest first, or `oldest`. */
  private final case class Order(byFinish: Boolean, oldest: Boolean):
    /** The order's key of `t`, as an SQL row. */
    private val key = if byFinish then "(t.finished_at, t.id)" else "t.id"
    private val direction = if oldest then "ASC" else "DESC"
    private val backwards = if oldest then "DESC" else "ASC"

    /** A side's rows in the list's order. */
    val ordering: String =
      if byFinish then s"t.finished_at $direction, t.id $direction" else s"t.id $direction"

    /** The sides' rows merged (`at`, `id`) in the list's order, and backwards. */
    val merged: String = s"at $direction, id $direction"
    val mergedBackwards: String = s"at $backwards, id $backwards"

    /** The sort's time of a side's rows: the finish time, or none (every row alike) in enqueue order. */
    def at(finishedAt: String): String = if byFinish then finishedAt else "NULL::timestamptz"
    private def value(c: Cursor): Fragment =
      if byFinish then const("(") ++ fr0"${c.at}, ${c.id}" ++ const(")") else fr0"${c.id}"

    /** The rows after `c` in the list: older than it, or newer when the list is `oldest` first. */
    def after(c: Cursor): Fragment = const(s"$key ${if oldest then ">" else "<"} ") ++ value(c)

    /** The rows down to `c` in the list, `c` included. */
    def downTo(c: Cursor): Fragment = const(s"$key ${if oldest then "<=" else ">="} ") ++ value(c)
    def cursor(row: TaskRow): Cursor = Cursor(Option.when(byFinish)(row.finishedAt).flatten, row.id)

  /**
   * One table read for the task list: `from`, the state as the console names it, its finish time, the
   * conditions its index answers (`where`) and those checked row by row (`residual`).
   */
  private final case class Side(
      from: String,
      state: String,
      finishedAt: String,
      order: Order,
      where: Vector[Fragment],
      residual: Vector[Fragment]
  ):
    private def clause(conditions: Vector[Fragment]): Fragment =
      if conditions.isEmpty then Fragment.empty
      else const(" WHERE ") ++ conditions.reduceLeft(_ ++ const(" AND ") ++ _)

    /** The side limited to the rows a scan reached: down to `bound` in the list. */
    def within(bound: Option[Cursor]): Side = copy(where = where ++ bound.map(order.downTo))

    def positions(limit: Int): Fragment =
      const(s"SELECT ${order.at(finishedAt)} AS at, t.id FROM $from") ++ clause(where) ++
        const(s" ORDER BY ${order.ordering} LIMIT ") ++ fr0"$limit"

    def rows(limit: Int): Fragment =
      const(s"""SELECT t.id, t.queue, $state AS state, t.priority, t.ordering_key, t.attempt, t.max_attempts,
             t.created_at, $finishedAt AS finished_at, t.payload::text AS payload, ${order.at(
          finishedAt
        )} AS at FROM $from""") ++
        clause(where ++ residual) ++ const(s" ORDER BY ${order.ordering} LIMIT ") ++ fr0"$limit"

  /** The task `id`, live or finished. */
  def task(id: Long): ConnectionIO[Option[TaskDetail]] =
    (const(s"""SELECT t.id, t.queue, $liveState, t.priority, t.ordering_key, t.unique_key, t.attempt,
             t.max_attempts, t.created_at, t.run_at, NULL::timestamptz, t.lease_owner, t.cancel_requested,
             t.payload::text, t.headers::text, t.errors::text
      FROM $tasks AS t WHERE t.id = """) ++ fr0"$id" ++
      const(s"""
      UNION ALL
      SELECT f.id, f.queue, f.state::text, f.priority, f.ordering_key, f.unique_key, f.attempt, f.max_attempts,
             f.created_at, NULL::timestamptz, f.finished_at, f.worker, NULL::text, f.payload::text,
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
   * Keys with tasks waiting, at most `limit`: each one's backlog (counted up to `cap + 1`) and head, the
   * task that runs next. A key is blocked when its head has failed at least once and others wait behind
   * it; blocked keys come first, then the longest waiting heads. Heads are found by their `head` mark,
   * which may for a moment be on a task behind the real head too (the marks err on that side): such a
   * task is left out by checking that no earlier task of its key is left.
   */
  def keys(limit: Int, cap: Int): ConnectionIO[Vector[KeyRow]] =
    (const(s"""WITH h AS (
        SELECT t.id, t.queue, t.ordering_key, t.attempt, t.created_at, $liveState AS state,
               jsonb_array_length(t.errors) > 0 AS failed
        FROM $tasks AS t WHERE t.ordering_key IS NOT NULL AND t.head
        ORDER BY failed DESC, t.created_at, t.id LIMIT """) ++ fr0"${limit * 2}" ++ const(s"""
      ), k AS (
        SELECT h.*, (SELECT count(*) FROM (SELECT 1 FROM $tasks AS b
                     WHERE b.queue = h.queue AND b.ordering_key = h.ordering_key LIMIT """) ++
      fr0"${cap + 1}" ++
      const(s""") AS c) AS backlog
        FROM h WHERE NOT EXISTS (
          SELECT 1 FROM $tasks AS e WHERE e.queue = h.queue AND e.ordering_key = h.ordering_key AND e.id < h.id)
        ORDER BY failed DESC, created_at, id LIMIT """) ++ fr0"$limit" ++ const(s"""
      )
      SELECT queue, ordering_key, backlog, id, state, attempt, created_at, failed AND backlog > 1 AS blocked
      FROM k ORDER BY blocked DESC, created_at, id""")).query[KeyRow].to[Vector]

private[console] object ConsoleQueries:

  final case class Minute(at: Instant, completed: Long, dead: Long)

  /** A count of finished tasks, `atLeast` when it stopped at the console's cap. */
  final case class Count(n: Long, atLeast: Boolean):
    def render: String = if atLeast then f"$n%,d+" else f"$n%,d"

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
          oldestSeconds = ps.flatMap(_.oldestSeconds).headOption
        )
      }

  /** A queue's tasks by state, and how long its oldest task ready to run has waited, in seconds. */
  final case class QueueCounts(
      queue: String,
      available: Long,
      scheduled: Long,
      waiting: Long,
      running: Long,
      completed: Count,
      dead: Count,
      cancelled: Count,
      oldestSeconds: Option[Double]
  )

  object QueueCounts:
    /** Every queue of `live` or `finished` (as [[finishedCounts]] gives them, counted up to `cap + 1`). */
    def of(
        live: Vector[LiveCounts],
        finished: Vector[(String, String, Long)],
        cap: Int
    ): Vector[QueueCounts] =
      val done = finished.groupMap(_._1)(r => r._2 -> r._3).view.mapValues(_.toMap).toMap
      (live.map(_.queue) ++ done.keys).distinct.sorted.map { q =>
        val l = live.find(_.queue == q)
        val f = done.getOrElse(q, Map.empty)
        def capped(state: String) =
          Count(f.getOrElse(state, 0L).min(cap.toLong), f.getOrElse(state, 0L) > cap)
        QueueCounts(
          q,
          l.fold(0L)(_.available),
          l.fold(0L)(_.scheduled),
          l.fold(0L)(_.waiting),
          l.fold(0L)(_.running),
          capped("completed"),
          capped("dead"),
          capped("cancelled"),
          l.flatMap(_.oldestSeconds)
        )
      }

  /**
   * A page of the task list: its rows, where the next page starts, and where the scan for matches stopped
   * when it stopped before the page was full (the rows after that position are still to be searched).
   */
  final case class Page(rows: Vector[TaskRow], next: Option[Cursor], scannedTo: Option[Cursor])

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
