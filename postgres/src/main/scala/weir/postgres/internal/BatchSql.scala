package weir.postgres.internal

import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.postgres.{BatchId, BatchProgress, Schema}

import java.time.Instant

/**
 * The statements of batches (see [[Sql]] for the conventions), for one schema: the open, the check and the
 * count of an enqueue into a batch, the close, the reads. What a member's end does is the schema's
 * `batch_step` (migration 13), which the trigger on `tasks` runs, as the count and the close do.
 */
private[postgres] final class BatchSql(schema: Schema) extends SqlBase(schema):
  import BatchSql.*

  private val batches = schema("batches")

  private val columns =
    "b.id, b.callback, b.members, b.completed, b.dead, b.cancelled, b.created_at, b.closed_at, b.ended_at"

  /**
   * Opens a batch whose callback is `task` of `queue`: the callback is inserted `waiting` for one parent,
   * the batch, and the batch names it. A keyed callback is its key's head unless a task of its key is in the
   * table (as an enqueue decides). Returns the batch's id and the callback's.
   */
  def open(queue: String, task: Sql.EncodedTask): ConnectionIO[(Long, Long)] =
    (const(s"""WITH callback AS (
      INSERT INTO $tasks AS t (queue, payload, priority, run_at, max_attempts, ordering_key, head, headers,
                               parents_left, state)
      VALUES (""") ++
      fr0"$queue, ${task.payload}::jsonb, ${task.priority}::smallint, " ++
      fr0"now() + ${task.delayMillis} * interval '1 millisecond', ${task.maxAttempts}, ${task.orderingKey}, " ++
      fr0"${task.orderingKey}::text IS NULL OR NOT EXISTS (" ++
      const(s"SELECT 1 FROM $tasks AS e WHERE e.queue = ") ++ fr0"$queue" ++
      fr0" AND e.ordering_key = ${task.orderingKey}::text), ${task.headers}::jsonb, 1, " ++
      const(
        s"""'waiting')
      RETURNING t.id)
    INSERT INTO $batches AS b (callback) SELECT c.id FROM callback AS c RETURNING b.id, b.callback"""
      )).query[(
        Long,
        Long
    )].unique

  /** The batch `id` as this statement's snapshot sees it, without a lock. */
  def progress(id: BatchId): ConnectionIO[Option[BatchProgress]] =
    (const(s"SELECT $columns FROM $batches AS b WHERE b.id = ") ++ fr0"${id.value}").query[Row].option.map(
      _.map(_.progress)
    )

  /**
   * The batch whose callback the live task `task` is, or of which it is a member; `None` for a task in no
   * batch, or no longer in `tasks`.
   */
  def ofTask(task: Long): ConnectionIO[Option[BatchProgress]] =
    (const(s"(SELECT $columns FROM $batches AS b WHERE b.callback = ") ++ fr0"$task" ++
      const(
        s") UNION ALL (SELECT $columns FROM $batches AS b WHERE b.id = (SELECT t.batch FROM $tasks AS t WHERE t.id = "
      ) ++
      fr0"$task" ++ const(")) LIMIT 1")).query[Row].option.map(_.map(_.progress))

  /**
   * Changes the batch `id` under its row's lock (the schema's `batch_step`): `added` more members, and a
   * close if `close`; the batch as it is then, `None` if there is no such batch. Members added to a batch
   * closed meanwhile fail the statement, with SQLSTATE [[closedState]], which aborts its transaction,
   * members and all; the error's detail is when the batch was closed.
   */
  def step(id: BatchId, added: Long, close: Boolean): ConnectionIO[Option[BatchProgress]] =
    (const(s"SELECT $columns FROM ${schema("batch_step")}(") ++
      fr0"${id.value}, $added, 0, 0, 0, $close" ++ const(") AS b")).query[Row].option.map(_.map(_.progress))

  /** The members of the batch `id` that have not ended, by id. */
  def unfinished(id: BatchId): ConnectionIO[Vector[Long]] =
    (const(s"SELECT t.id FROM $tasks AS t WHERE t.batch = ") ++ fr0"${id.value}" ++ const(" ORDER BY t.id"))
      .query[Long]
      .to[Vector]

private[postgres] object BatchSql:

  /** The SQLSTATE of an enqueue into a batch closed meanwhile (`object_not_in_prerequisite_state`). */
  val closedState: String = "55000"

  /** A row of `batches`. */
  final case class Row(
      id: Long,
      callback: Long,
      members: Long,
      completed: Long,
      dead: Long,
      cancelled: Long,
      createdAt: Instant,
      closedAt: Option[Instant],
      endedAt: Option[Instant]
  ):
    def progress: BatchProgress =
      BatchProgress(
        id = BatchId(id),
        callback = callback,
        members = members,
        completed = completed,
        dead = dead,
        cancelled = cancelled,
        createdAt = createdAt,
        closedAt = closedAt,
        endedAt = endedAt
      )
