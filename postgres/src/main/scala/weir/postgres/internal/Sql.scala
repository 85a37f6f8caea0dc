package weir.postgres.internal

import doobie.*
import doobie.implicits.*
import weir.postgres.Schema

import java.time.Instant

/**
 * Every statement weir-postgres runs, for one schema. Each is a single round trip; batches travel as
 * arrays. Finalisations (complete, fail, hand back) name the claim they finish by its token, drawn afresh
 * for every claim and cleared by every finish and rescue, so a late finisher cannot overwrite a rescue and
 * a rescue cannot overwrite a completion: whichever commits first wins, the other changes no row.
 *
 * Batches of claims are matched with `= ANY(array)` on the token's unique index rather than by joining an
 * `unnest`, and rows picked in one part of a statement are found again by `id = ANY(ARRAY(…))` rather than
 * by a join alone: a join's plan depends on the table's statistics, and a queue's are often stale (analyzed
 * while it was empty, then a burst arrives). Planned for an empty table, a join may walk the whole primary
 * key once for every picked row; an `= ANY` on an index has no such plan.
 *
 * The statements live by concern, [[EnqueueSql]], [[FinishSql]] and [[WorkerSql]], with what they share in
 * [[SqlBase]]; this class holds the claim and the key heads' repair, and exports the others, so that a
 * worker's parts use one `Sql`.
 */
private[postgres] final class Sql(schema: Schema) extends SqlBase(schema):
  import Sql.*

  private val enqueueing = new EnqueueSql(schema)
  private val finishing = new FinishSql(schema)
  private val working = new WorkerSql(schema)

  export enqueueing.{enqueueMany, enqueueOne, enqueuePlain}
  export finishing.{complete, fail, handBack, handBackAll, record, snooze}
  export working.{
    beat, deregister, endEarlierSessions, forgetWorkers, holdSession, register, releaseSession, rescue
  }

  // ---- claim

  /**
   * Claims up to `limit` available tasks of `queue` for `owner`, by priority, then run-at, then id, within
   * what the queue's controls allow (paused: none; a limit on running tasks; a rate). A task with an
   * ordering key is claimed only while it is its key's head (no task of its key with a smaller id is left,
   * and none is running); the unique index on running keys makes the database refuse the rare claim that
   * races another one for the same key (the caller claims again). The claim index holds only the tasks
   * marked `head` (see [[nextHeads]]), so a key's waiting tasks cost the claim nothing.
   *
   * The statement is the schema's `claim_controlled` function (migration 6), planned with bitmap and
   * sequential scans off so that stale statistics cannot turn it into a scan of the whole backlog. It asks
   * for an asynchronous commit of its own transaction, so that it can run in autocommit ([[Run.single]]);
   * the setting is made here, outside the function, whose own settings end when it returns.
   *
   * The rows come back in claim order, sorted by the server: `RETURNING` alone gives them in no defined
   * order. `created_at` travels as microseconds since the epoch, which the driver reads as a plain number
   * rather than parsing a timestamp's text. For a queue with a control, a last row without a task says
   * what the controls did ([[Control]]).
   */
  def claim(queue: String, owner: Long, limit: Int, leaseMillis: Long): ConnectionIO[Claim] =
    val statement =
      (const(
        s"SELECT c.* FROM set_config('synchronous_commit', 'off', true) AS async, ${schema("claim_controlled")}("
      ) ++
        fr0"$queue, $owner, $limit, $leaseMillis" ++ const(") AS c")).query[ClaimRow].to[Vector]
    // the clock read on the connection right before the statement goes out: see `Claim.sentAt`
    doobie.free.connection.delay(System.nanoTime()).flatMap(sentAt => statement.map(Claim.of(_, sentAt)))

  // ---- queue controls

  /** Gives `queue` a row of controls (none set) unless it has one. */
  def addQueue(queue: String): ConnectionIO[Int] =
    (const(s"INSERT INTO $queues (name) VALUES (") ++ fr0"$queue" ++
      const(") ON CONFLICT (name) DO NOTHING")).update.run

  // ---- key heads

  /**
   * Marks the head of every key left without a mark (see [[headAtInsert]]): one walk of the waiting
   * tasks' index taking one entry per key, then the key's earliest task. Returns the queue of each task
   * it marked. The update is tested once for a key found before it reads any row (see [[nextHeads]]): the
   * usual walk finds none, and reads one index page.
   */
  def repairHeads: ConnectionIO[Vector[String]] =
    val waiting = skipScan("waiting", "queue", "ordering_key", "w.ordering_key IS NOT NULL AND NOT w.head")
    const(s"""WITH RECURSIVE $waiting
    UPDATE $tasks AS t SET head = true
    WHERE EXISTS (SELECT 1 FROM waiting) AND NOT t.head AND t.id = ANY(ARRAY(
      SELECT (SELECT e.id FROM $tasks AS e
              WHERE e.queue = k.queue AND e.ordering_key = k.ordering_key
              ORDER BY e.id LIMIT 1)
      FROM waiting AS k))
    RETURNING t.queue""").query[String].to[Vector]

  // ---- queries

  /** Tasks of `queue` not finished (available or running anywhere). */
  def unfinished(queue: String): ConnectionIO[Long] =
    (const(s"SELECT count(*) FROM $tasks WHERE queue = ") ++ fr0"$queue").query[Long].unique

object Sql:

  /**
   * What a beat found among the claims it was given: the tokens no running task holds any more (`gone`),
   * and those whose cancel was requested, with the reason (`cancels`).
   */
  final case class Beat(gone: Vector[Long], cancels: Vector[(Long, String)])

  object Beat:
    def of(rows: Vector[(Long, Option[String])]): Beat =
      Beat(
        rows.collect { case (token, None) => token },
        rows.collect { case (token, Some(why)) => token -> why }
      )

  /**
   * A task ready for the database: payload as JSON text, run-at as a delay from the server's now, headers as
   * a JSON object's text or `None` (stored as NULL).
   */
  final case class EncodedTask(
      payload: String,
      priority: Int,
      delayMillis: Long,
      maxAttempts: Int,
      orderingKey: Option[String],
      uniqueKey: Option[String],
      headers: Option[String]
  )

  /**
   * What a claim gave: its tasks, and what the queue's controls said, if it has any (`None`: it has none,
   * and a claim is held back only by the tasks there are); `sentAt`, the worker's monotonic clock
   * (`System.nanoTime`) read right before the statement was sent, so no later than the server's `now()`
   * that started its leases: they end no earlier than `sentAt + lease` on the worker's clock, which its
   * heartbeat's choice of the leases to extend rests on ([[Claims.due]]).
   */
  final case class Claim(rows: Vector[Claimed], control: Option[Control], sentAt: Long)

  object Claim:
    /** No claim was made (it failed, or raced another): no rows, so no lease to date. */
    val empty: Claim = Claim(Vector.empty, None, sentAt = 0L)

    /** The tasks' rows, and the controls' row that follows them for a queue with a control. */
    def of(rows: Vector[ClaimRow], sentAt: Long): Claim =
      val tasks = Vector.newBuilder[Claimed]
      var control: Option[Control] = None
      rows.foreach { r =>
        r.id match
          case Some(id) =>
            tasks += Claimed(
              id,
              r.token.getOrElse(0L),
              r.attempt.getOrElse(0),
              r.maxAttempts.getOrElse(0),
              r.priority.getOrElse(0),
              r.orderingKey,
              r.payload.getOrElse(""),
              r.createdAtMicros.getOrElse(0L),
              r.headers
            )
          case None => control = Some(Control(r.limited.getOrElse(false), r.heldBackMillis))
      }
      Claim(tasks.result(), control, sentAt)

  /**
   * What a queue's controls did to a claim: `limited`, the queue has a limit on running tasks (finishing
   * one of its tasks should wake its claimers); `heldBackMillis`, whether they held the claim back:
   * `None`, no; `Some(-1)`, until a task of the queue finishes or the controls change; `Some(n)`, until the
   * rate's next token, `n` ms from now.
   */
  final case class Control(limited: Boolean, heldBackMillis: Option[Long])

  /** A row of the claim function, a task's or the controls'. */
  final case class ClaimRow(
      id: Option[Long],
      token: Option[Long],
      attempt: Option[Int],
      maxAttempts: Option[Int],
      priority: Option[Int],
      orderingKey: Option[String],
      payload: Option[String],
      createdAtMicros: Option[Long],
      headers: Option[String],
      limited: Option[Boolean],
      heldBackMillis: Option[Long]
  )

  /** A claimed row, its payload and headers not yet decoded. */
  final case class Claimed(
      id: Long,
      token: Long,
      attempt: Int,
      maxAttempts: Int,
      priority: Int,
      orderingKey: Option[String],
      payload: String,
      createdAtMicros: Long,
      headers: Option[String]
  ):
    def createdAt: Instant =
      Instant.ofEpochSecond(
        Math.floorDiv(createdAtMicros, 1000000L),
        Math.floorMod(createdAtMicros, 1000000L) * 1000L
      )
