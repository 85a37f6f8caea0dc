package weir.postgres.internal

import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import io.circe.{Json, JsonObject}
import io.circe.parser.parse
import weir.postgres.{
  BatchId, BatchMember, BatchView, Schema, TaskState, WorkflowId, WorkflowTask, WorkflowView
}

/**
 * The read models of workflows and batches (see [[Sql]] for the conventions), for one schema: a workflow's
 * view and a page of a batch's members, each one statement of one row, and a workflow's unfinished tasks for
 * its cancel. A workflow holds the tasks whose `workflow` is its id, and the task of its id when that one's
 * is NULL (migration 14); every arm reads an index of one table.
 */
private[postgres] final class WorkflowSql(schema: Schema) extends SqlBase(schema):
  import WorkflowSql.*

  private val batches = schema("batches")

  /** The rows of both tables in the workflow `w`, with `columns` of each (`t` the alias) and `joined`. */
  private def members(w: Long, live: String, done: String): Fragment =
    def arm(table: String, columns: String, which: Fragment) =
      const(s"SELECT $columns, t.workflow IS NOT NULL AS joined FROM $table AS t WHERE ") ++ which
    val root = const("t.id = ") ++ fr0"$w" ++ const(" AND t.workflow IS NULL")
    arm(tasks, live, idle(w)) ++ const(" UNION ALL ") ++ arm(tasks, live, running(w)) ++
      const(" UNION ALL ") ++ arm(tasks, live, root) ++ const(" UNION ALL ") ++
      arm(finished, done, const("t.workflow = ") ++ fr0"$w") ++ const(" UNION ALL ") ++
      arm(finished, done, root)

  /**
   * The workflow `w`: whether some task names it, each state's count over all its tasks, and its first
   * `limit` tasks by id, as JSON text.
   */
  def view(w: WorkflowId, limit: Int): ConnectionIO[Option[WorkflowView]] =
    val live = s"t.id, t.queue, ${TaskStateSql.live(schema)} AS state, t.after, t.attempt, t.max_attempts, " +
      "false AS result, t.batch"
    val done = s"t.id, t.queue, ${TaskStateSql.finished} AS state, t.after, t.attempt, t.max_attempts, " +
      "t.result IS NOT NULL AS result, t.batch"
    (const("WITH m AS (") ++ members(w.value, live, done) ++ const(s""")
    SELECT coalesce(bool_or(m.joined), false),
           (SELECT json_agg(json_build_object('state', c.state, 'n', c.n))::text
            FROM (SELECT x.state, count(*) AS n FROM m AS x GROUP BY x.state) AS c),
           (SELECT json_agg(json_build_object('id', p.id, 'queue', p.queue, 'state', p.state, 'after', p.after,
                                              'attempt', p.attempt, 'max_attempts', p.max_attempts,
                                              'result', p.result, 'batch', p.batch) ORDER BY p.id)::text
            FROM (SELECT * FROM m AS x ORDER BY x.id LIMIT """) ++ fr0"$limit" ++ const(""") AS p)
    FROM m""")).query[(Boolean, Option[String], Option[String])].unique.flatMap {
      case (false, _, _) => FC.pure(None)
      case (true, counts, rows) => decode(workflowView(w, counts, rows)).map(Some(_))
    }

  /** Whether some task, live or finished, names the workflow `w`. */
  def exists(w: WorkflowId): ConnectionIO[Boolean] =
    (const(s"SELECT EXISTS (SELECT 1 FROM $tasks AS t WHERE ") ++ idle(w.value) ++
      const(s") OR EXISTS (SELECT 1 FROM $tasks AS t WHERE ") ++ running(w.value) ++
      const(s") OR EXISTS (SELECT 1 FROM $finished AS t WHERE t.workflow = ") ++ fr0"${w.value}" ++
      const(")"))
      .query[Boolean]
      .unique

  /** The tasks of the workflow `w` that have not ended, by id. */
  def unfinished(w: WorkflowId): ConnectionIO[Vector[Long]] =
    (const(s"SELECT t.id FROM $tasks AS t WHERE ") ++ idle(w.value) ++
      const(s" UNION ALL SELECT t.id FROM $tasks AS t WHERE ") ++ running(w.value) ++
      const(s" UNION ALL SELECT t.id FROM $tasks AS t WHERE t.id = ") ++ fr0"${w.value}" ++
      const(" AND t.workflow IS NULL ORDER BY 1")).query[Long].to[Vector]

  /**
   * The batch `b` ([[BatchSql]]'s row), its callback's state, and up to `limit` members with ids above
   * `after`, by id, as JSON text, with one more to tell whether a next page exists; no row for an unknown
   * batch. Each table's members are read through its index on `batch`, at most `limit + 1` of each.
   */
  def batch(b: BatchId, after: Long, limit: Int): ConnectionIO[Option[BatchView]] =
    val more = limit + 1
    def arm(table: String, state: String, result: String) =
      const(
        s"""(SELECT t.id, t.queue, $state AS state, t.attempt, t.max_attempts, $result AS result, t.workflow
        FROM $table AS t WHERE t.batch = """
      ) ++ fr0"${b.value}" ++ const(" AND t.id > ") ++ fr0"$after" ++
        const(" ORDER BY t.id LIMIT ") ++ fr0"$more" ++ const(")")
    (const("WITH page AS (") ++ arm(tasks, TaskStateSql.live(schema), "false") ++ const(" UNION ALL ") ++
      arm(finished, TaskStateSql.finished, "t.result IS NOT NULL") ++ const(s""")
    SELECT b.id, b.callback, b.members, b.completed, b.dead, b.cancelled, b.created_at, b.closed_at, b.ended_at,
           (SELECT ${TaskStateSql.live(schema)} FROM $tasks AS t WHERE t.id = b.callback
            UNION ALL SELECT ${TaskStateSql.finished} FROM $finished AS t WHERE t.id = b.callback LIMIT 1),
           (SELECT json_agg(json_build_object('id', p.id, 'queue', p.queue, 'state', p.state,
                                              'attempt', p.attempt, 'max_attempts', p.max_attempts,
                                              'result', p.result, 'workflow', p.workflow) ORDER BY p.id)::text
            FROM (SELECT * FROM page AS x ORDER BY x.id LIMIT """) ++ fr0"$more" ++ const(s""") AS p)
    FROM $batches AS b WHERE b.id = """) ++ fr0"${b.value}")
      .query[(BatchSql.Row, Option[String], Option[String])]
      .option
      .flatMap(_.traverse { (row, callback, json) =>
        decode(for
          state <- callback.traverse(stateOf)
          listed <- json.traverse(batchMembers).map(_.getOrElse(Vector.empty))
        yield BatchView(
          row.progress,
          state,
          listed.take(limit),
          Option.when(listed.size > limit)(listed(limit - 1).id)
        ))
      })

private[postgres] object WorkflowSql:

  /**
   * The live tasks (alias `t`) whose workflow is `w` and that are not running: a range of
   * `tasks_in_workflow`, which leaves the running ones out (migration 17).
   */
  def idle(w: Long): Fragment =
    Fragment.const0("t.workflow = ") ++ fr0"$w" ++ Fragment.const0(s" AND t.$NotRunning")

  /**
   * The running tasks (alias `t`) whose workflow is `w`: read through `tasks_running`, which holds the tasks
   * in flight on every worker, so a bounded read whatever the workflow's size.
   */
  def running(w: Long): Fragment =
    Fragment.const0("t.workflow = ") ++ fr0"$w" ++ Fragment.const0(s" AND t.$Running")

  /**
   * The condition `tasks_in_workflow` adds to `workflow IS NOT NULL`: a read of a workflow's live tasks is
   * served by that index only if it states it, and must read the running ones apart, with [[Running]].
   */
  val NotRunning = "state <> 'running'"

  /** The running tasks' condition, that of the index `tasks_running`. */
  val Running = "state = 'running'"

  /** A read that made no sense of what the statement returned, named. */
  private def decode[A](a: Either[String, A]): ConnectionIO[A] =
    a.fold(why => FC.raiseError(new IllegalStateException(s"a workflow's or batch's read: $why")), FC.pure)

  private def stateOf(name: String): Either[String, TaskState] =
    TaskState.parse(name).toRight(s"unknown task state: '$name'")

  private def objects(json: String): Either[String, Vector[JsonObject]] =
    parse(json).left.map(_.getMessage).flatMap(
      _.asArray.toRight(s"not an array: $json").map(_.flatMap(_.asObject))
    )

  private def long(o: JsonObject, field: String): Either[String, Long] =
    o(field).flatMap(_.asNumber).flatMap(_.toLong).toRight(s"no number '$field' in ${Json.fromJsonObject(o)}")

  private def optionalLong(o: JsonObject, field: String): Option[Long] =
    o(field).flatMap(_.asNumber).flatMap(_.toLong)

  private def text(o: JsonObject, field: String): Either[String, String] =
    o(field).flatMap(_.asString).toRight(s"no text '$field' in ${Json.fromJsonObject(o)}")

  private def flag(o: JsonObject, field: String): Boolean = o(field).flatMap(_.asBoolean).getOrElse(false)

  private def workflowView(
      w: WorkflowId,
      counts: Option[String],
      rows: Option[String]
  ): Either[String, WorkflowView] =
    for
      byState <- counts.traverse(objects).map(_.getOrElse(Vector.empty)).flatMap(_.traverse(o =>
        (text(o, "state").flatMap(stateOf), long(o, "n")).tupled
      ))
      listed <- rows.traverse(objects).map(_.getOrElse(Vector.empty)).flatMap(_.traverse(o =>
        for
          id <- long(o, "id")
          queue <- text(o, "queue")
          state <- text(o, "state").flatMap(stateOf)
          attempt <- long(o, "attempt")
          max <- long(o, "max_attempts")
        yield
          val after =
            o("after").flatMap(_.asArray).getOrElse(Vector.empty).flatMap(_.asNumber).flatMap(_.toLong)
          WorkflowTask(
            id = id,
            queue = queue,
            state = state,
            after = after,
            layer = 0,
            attempt = attempt.toInt,
            maxAttempts = max.toInt,
            result = flag(o, "result"),
            batch = optionalLong(o, "batch").map(BatchId(_))
          )
      ))
    yield
      val layers = WorkflowView.layers(listed.map(t => (t.id, t.after)))
      WorkflowView(w, byState.toMap, listed.lazyZip(layers).map((t, l) => t.copy(layer = l)))

  private def batchMembers(json: String): Either[String, Vector[BatchMember]] =
    objects(json).flatMap(_.traverse(o =>
      for
        id <- long(o, "id")
        queue <- text(o, "queue")
        state <- text(o, "state").flatMap(stateOf)
        attempt <- long(o, "attempt")
        max <- long(o, "max_attempts")
      yield BatchMember(
        id = id,
        queue = queue,
        state = state,
        attempt = attempt.toInt,
        maxAttempts = max.toInt,
        result = flag(o, "result"),
        workflow = optionalLong(o, "workflow").map(WorkflowId(_))
      )
    ))
