package weir.postgres.internal

import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.postgres.{FinishedState, Schema, TaskCursor, TaskPage, TaskQuery, TaskRow, TaskSort}
import weir.postgres.internal.TaskStateSql.given

import java.time.Instant

/**
 * The task list's statements behind [[weir.postgres.TaskBrowser.tasks]], for one schema: a page of tasks,
 * live and finished, by keyset over both tables.
 */
private[postgres] final class TaskListSql(schema: Schema) extends SqlBase(schema):
  import TaskListSql.*

  /**
   * A page of at most `size` tasks matching `q`, newest first by `q.sort` (or oldest first), strictly after
   * `q.after`.
   *
   * Enqueue order is id order (ids are drawn as tasks are enqueued), so that both tables page by their
   * primary key; finish order is `(finished_at, id)`, through `finished_prune`, or through one range of
   * `finished_by_state` per state and queue when those are filtered. Each read is narrowed by what its
   * index answers; the rest of the filter (for live tasks all of it, the table holding the backlog only;
   * for finished ones a key, a priority, payload text, and in enqueue order a state or a queue) is checked
   * on at most `scan` tasks, the first ones after the position across both tables. When those hold too few
   * matches to fill the page, it ends where the scan stopped and says so ([[TaskPage.scannedTo]]); the next
   * page goes on from there. So no page reads more than `scan` rows, however rare its matches.
   */
  def page(q: TaskQuery, size: Int, scan: Int): ConnectionIO[TaskPage] =
    val order = Order(byFinish = q.sort == TaskSort.Finished, oldest = q.oldest)
    val after = q.after.map(order.after).toVector
    val liveSide = Option.when(!order.byFinish && q.state.forall(_.live))(
      Side(
        s"$tasks AS t",
        TaskStateSql.live(schema),
        "NULL::timestamptz",
        order,
        after,
        Vector(
          q.queue.map(v => fr0"t.queue = $v"),
          q.state.map(s => const(s"${TaskStateSql.live(schema)} = ") ++ fr0"${s.name}"),
          q.from.map(t => fr0"t.created_at >= $t"),
          q.to.map(t => fr0"t.created_at < $t")
        ).flatten ++ anywhere(q)
      )
    )
    val finishedSides: ConnectionIO[Vector[Side]] =
      if q.state.exists(_.live) then FC.pure(Vector.empty)
      else if order.byFinish then
        val range = Vector(
          q.from.map(t => fr0"t.finished_at >= $t"),
          q.to.map(t => fr0"t.finished_at < $t")
        ).flatten ++ after
        if q.state.isEmpty && q.queue.isEmpty then
          FC.pure(Vector(Side(
            s"$finished AS t",
            TaskStateSql.finished,
            "t.finished_at",
            order,
            range,
            anywhere(q)
          )))
        else
          val states = q.state.fold(FinishedState.values.toVector.map(_.state))(Vector(_)).map(_.name)
          q.queue.fold(finishedQueues(states))(v => FC.pure(states.map(_ -> v))).map(_.map((state, queue) =>
            Side(
              s"$finished AS t",
              TaskStateSql.finished,
              "t.finished_at",
              order,
              Vector(fr0"t.state = $state::" ++ const(schema("finished_state")), fr0"t.queue = $queue") ++
                range,
              anywhere(q)
            )
          ))
      else
        // the time range stays with the index conditions: the planner reads it through `finished_created`
        // when it is narrow, and through the primary key, filtering, when it is wide
        val range = Vector(
          q.from.map(t => fr0"t.created_at >= $t"),
          q.to.map(t => fr0"t.created_at < $t")
        ).flatten ++ after
        val residual = Vector(
          q.queue.map(v => fr0"t.queue = $v"),
          q.state.map(s => const(s"${TaskStateSql.finished} = ") ++ fr0"${s.name}")
        ).flatten ++ anywhere(q)
        FC.pure(Vector(Side(
          s"$finished AS t",
          TaskStateSql.finished,
          "t.finished_at",
          order,
          range,
          residual
        )))
    for
      history <- finishedSides
      sides = liveSide.toVector ++ history
      scanned = sides.filter(_.residual.nonEmpty)
      bound <- if scanned.isEmpty then FC.pure(None) else scanBound(order, scanned, scan)
      rows <-
        if sides.isEmpty then FC.pure(Vector.empty) else rowsOf(order, sides.map(_.within(bound)), size + 1)
    yield
      val shown = rows.take(size)
      if rows.size > size then TaskPage(shown, Some(order.cursor(shown.last)), None)
      else TaskPage(shown, bound, bound)

  /** The filters no index of either table answers. */
  private def anywhere(q: TaskQuery): Vector[Fragment] =
    Vector(
      q.key.map(k => fr0"t.ordering_key = $k"),
      q.priority.map(p => fr0"t.priority = ${p.toShort}"),
      q.text.map(s => fr0"strpos(lower(t.payload::text), lower($s)) > 0")
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
  private def scanBound(order: Order, sides: Vector[Side], scan: Int): ConnectionIO[Option[TaskCursor]] =
    (const("WITH w AS (SELECT at, id FROM (") ++ union(sides.map(_.positions(scan))) ++
      const(s") AS u ORDER BY ${order.merged} LIMIT ") ++ fr0"$scan" ++
      const(s") SELECT at, id, (SELECT count(*) FROM w) FROM w ORDER BY ${order.mergedBackwards} LIMIT 1"))
      .query[(Option[Instant], Long, Long)].option
      .map(_.collect { case (at, id, n) if n >= scan => TaskCursor(at, id) })

  private def rowsOf(order: Order, sides: Vector[Side], limit: Int): ConnectionIO[Vector[TaskRow]] =
    (const(
      "SELECT id, queue, state, priority, ordering_key, attempt, max_attempts, created_at, finished_at, payload FROM ("
    ) ++ union(sides.map(_.rows(limit))) ++ const(s") AS page ORDER BY ${order.merged} LIMIT ") ++
      fr0"$limit")
      .query[TaskRow].to[Vector]

  private def union(parts: Vector[Fragment]): Fragment =
    parts.map(p => const("(") ++ p ++ const(")")).reduceLeft(_ ++ const(" UNION ALL ") ++ _)

private[postgres] object TaskListSql:

  private def const(s: String): Fragment = Fragment.const0(s)

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
    private def value(c: TaskCursor): Fragment =
      if byFinish then const("(") ++ fr0"${c.at}, ${c.id}" ++ const(")") else fr0"${c.id}"

    /** The rows after `c` in the list: older than it, or newer when the list is `oldest` first. */
    def after(c: TaskCursor): Fragment = const(s"$key ${if oldest then ">" else "<"} ") ++ value(c)

    /** The rows down to `c` in the list, `c` included. */
    def downTo(c: TaskCursor): Fragment = const(s"$key ${if oldest then "<=" else ">="} ") ++ value(c)
    def cursor(row: TaskRow): TaskCursor = TaskCursor(Option.when(byFinish)(row.finishedAt).flatten, row.id)

  /**
   * One table read for the task list: `from`, the state as [[weir.postgres.TaskState]] names it, its finish
   * time, the conditions its index answers (`where`) and those checked row by row (`residual`).
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
    def within(bound: Option[TaskCursor]): Side = copy(where = where ++ bound.map(order.downTo))

    def positions(limit: Int): Fragment =
      const(s"SELECT ${order.at(finishedAt)} AS at, t.id FROM $from") ++ clause(where) ++
        const(s" ORDER BY ${order.ordering} LIMIT ") ++ fr0"$limit"

    def rows(limit: Int): Fragment =
      const(s"""SELECT t.id, t.queue, $state AS state, t.priority, t.ordering_key, t.attempt, t.max_attempts,
             t.created_at, $finishedAt AS finished_at, t.payload::text AS payload, ${order.at(
          finishedAt
        )} AS at FROM $from""") ++
        clause(where ++ residual) ++ const(s" ORDER BY ${order.ordering} LIMIT ") ++ fr0"$limit"
