package weir.postgres.internal

import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import io.circe.Json
import io.circe.parser.parse
import weir.postgres.{
  AttemptError, BatchId, KeyNeighbour, KeyNeighbours, Schema, TaskDetail, TaskState, WorkflowId
}
import weir.postgres.internal.TaskStateSql.given

import java.time.{Instant, OffsetDateTime}
import java.time.format.DateTimeParseException

/**
 * The statements behind [[weir.postgres.TaskBrowser.task]] and [[weir.postgres.TaskBrowser.neighbours]],
 * for one schema: one task, live or finished, and the live tasks of its key around it.
 */
private[postgres] final class TaskDetailSql(schema: Schema) extends SqlBase(schema):
  import TaskDetailSql.*

  private val liveState = TaskStateSql.live(schema)

  /**
   * The task `id`, live or finished: one probe of each table's primary key; for its workflow, when it names
   * none, a probe of each table's workflow index and of the running tasks (is it the first task of one?); for its batch, when it
   * names none, a probe of the batches' callbacks.
   */
  def task(id: Long): ConnectionIO[Option[TaskDetail]] =
    // the live tasks of a workflow in two probes, as `WorkflowSql` reads them: `tasks_in_workflow` holds
    // those not running
    val links = s"""coalesce(t.workflow, CASE WHEN EXISTS (SELECT 1 FROM $tasks AS c
                                                       WHERE c.workflow = t.id AND c.${WorkflowSql.NotRunning})
               OR EXISTS (SELECT 1 FROM $tasks AS c WHERE c.workflow = t.id AND c.${WorkflowSql.Running})
               OR EXISTS (SELECT 1 FROM $finished AS c WHERE c.workflow = t.id) THEN t.id END),
             coalesce(t.batch, (SELECT b.id FROM ${schema("batches")} AS b WHERE b.callback = t.id))"""
    (const(
      s"""SELECT t.id, t.queue, $liveState, t.priority, t.ordering_key, t.unique_key, t.attempt,
             t.max_attempts, t.created_at, t.run_at, NULL::timestamptz, t.lease_owner, t.cancel_requested,
             t.payload::text, t.headers::text, t.errors::text, $links
      FROM $tasks AS t WHERE t.id = """
    ) ++ fr0"$id" ++
      const(s"""
      UNION ALL
      SELECT t.id, t.queue, ${TaskStateSql.finished}, t.priority, t.ordering_key, t.unique_key, t.attempt, t.max_attempts,
             t.created_at, NULL::timestamptz, t.finished_at, t.worker, NULL::text, t.payload::text,
             t.headers::text, t.errors::text, $links
      FROM $finished AS t WHERE t.id = """) ++ fr0"$id" ++ const(" LIMIT 1"))
      .query[Stored].map(_.detail).option

  /**
   * The tasks of `key` in `queue` around the task `id`: up to `n` before it (they run first) and `n` after
   * it, in the order they will run (the key's order is its ids' order): two ranges of `tasks_ordering_key`.
   */
  def neighbours(queue: String, key: String, id: Long, n: Int): ConnectionIO[KeyNeighbours] =
    def around(op: String, order: String) =
      (const(
        s"SELECT t.id, $liveState, t.attempt, t.created_at FROM $tasks AS t WHERE t.queue = "
      ) ++
        fr0"$queue" ++ const(" AND t.ordering_key = ") ++ fr0"$key" ++ const(s" AND t.id $op ") ++ fr0"$id" ++
        const(s" ORDER BY t.id $order LIMIT ") ++ fr0"$n").query[KeyNeighbour].to[Vector]
    (around("<", "DESC").map(_.reverse), around(">", "ASC")).mapN(KeyNeighbours.apply)

private[postgres] object TaskDetailSql:

  /** A task's row as read, its headers and errors as their JSON text. */
  private final case class Stored(
      id: Long,
      queue: String,
      state: TaskState,
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
      errors: String,
      workflow: Option[Long],
      batch: Option[Long]
  ):
    def detail: TaskDetail =
      TaskDetail(
        id = id,
        queue = queue,
        state = state,
        priority = priority,
        key = key,
        uniqueKey = uniqueKey,
        attempt = attempt,
        maxAttempts = maxAttempts,
        createdAt = createdAt,
        runAt = runAt,
        finishedAt = finishedAt,
        worker = worker,
        cancelRequested = cancelRequested,
        payload = payload,
        headers = TaskDetailSql.headers(headers),
        errors = TaskDetailSql.errors(errors),
        workflow = workflow.map(WorkflowId(_)),
        batch = batch.map(BatchId(_))
      )

  /**
   * The string fields of the `headers` column's object. A row holds what [[HeaderCodec]] wrote (or nothing);
   * the read skips whatever else it finds rather than failing the page that shows it.
   */
  def headers(json: Option[String]): Map[String, String] =
    json.flatMap(parse(_).toOption).flatMap(_.asObject).fold(Map.empty)(
      _.toMap.collect { case (k, v) if v.isString => k -> v.asString.getOrElse("") }
    )

  /**
   * The entries of the `errors` column's array, as the finishing statements write them: `attempt`, `at`
   * (a `timestamptz` in JSON), `worker` and `error`, any of which an entry may lack.
   */
  def errors(json: String): Vector[AttemptError] =
    parse(json).toOption.flatMap(_.asArray).getOrElse(Vector.empty).map { e =>
      def field(name: String): Option[Json] = e.asObject.flatMap(_(name))
      AttemptError(
        attempt = field("attempt").flatMap(_.asNumber).flatMap(_.toInt),
        at = field("at").flatMap(_.asString).flatMap(instant),
        worker = field("worker").flatMap(_.asNumber).flatMap(_.toLong),
        error = field("error").map(j => j.asString.getOrElse(j.noSpaces)).getOrElse(e.noSpaces)
      )
    }

  /** A time as JSON writes a `timestamptz` (`2026-01-31T12:00:00.123456+00:00`), or as `Instant` does. */
  private def instant(s: String): Option[Instant] =
    try Some(OffsetDateTime.parse(s).toInstant)
    catch case _: DateTimeParseException => None
