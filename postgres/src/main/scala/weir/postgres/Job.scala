package weir.postgres

import doobie.ConnectionIO
import doobie.free.connection as FC
import weir.{Interruptible, Interruption, TaskOutcome}
import weir.postgres.internal.{BatchSql, GraphSql, Liveness, Sql}

import java.time.Instant
import scala.concurrent.duration.FiniteDuration

/**
 * A task a worker has claimed: what its handler receives.
 *
 * `attempt` counts from 1 and includes this one; `maxAttempts` is the task's own limit. `headers` are the
 * ones the task was enqueued with ([[NewTask.headers]]), the same on every attempt; empty for a task
 * enqueued without any, or by a release before they existed. [[completeIn]] finishes the task inside the
 * handler's own transaction (see there); [[snooze]] is a snoozing handler's "not now" (see there).
 *
 * A job is [[weir.Refusable]]: the engine asks it, just before it would start, whether its claim may still
 * be held by this worker; a claim that another worker may have rescued (this worker having been taken for
 * dead) refuses, ends not started and is handed back, so that one claim never starts in two places.
 *
 * A job is [[weir.Interruptible]]: when an operator cancels it ([[TaskActions.cancel]]), its worker hears
 * of it and interrupts its handler (the handler's finalizers run), and the task ends cancelled; one told
 * before it starts refuses to start, and is cancelled as well.
 */
final class Job[+A] private[postgres] (
    val id: Long,
    val queue: String,
    val payload: A,
    val attempt: Int,
    val maxAttempts: Int,
    val priority: Int,
    val orderingKey: Option[String],
    val createdAt: Instant,
    val headers: Map[String, String],
    private[postgres] val token: Long,
    private[postgres] val life: Job.Life
) extends Interruptible:

  /**
   * The engine's question before each attempt: why this claim must not start (its cancel was requested,
   * another worker rescued it, or this worker's heartbeat is too late to be sure none did: see
   * [[weir.postgres.WorkerStats.refused]]), or `None`, and the claim counts as started from then on (so
   * that it goes back counted should its result never be written). Its claim's life is a [[weir.Tracked]]
   * item's.
   */
  def tryStart(): Option[String] = life.tryStart()

  /** Registers the engine's interruption of this job's attempt: see [[weir.Interruptible]]. */
  def onInterrupt(interrupt: String => Unit): () => Unit = life.onInterrupt(interrupt)

  /**
   * Completes this task as part of the caller's transaction: the handler's own writes and the completion
   * commit together or not at all, so a handler that writes to weir's database has exactly-once effects
   * there. True if this claim completed the task; false if it no longer held it (it was rescued after a
   * lost heartbeat, for instance): then the caller should roll back.
   *
   * The pipeline's later acknowledgement of the same task changes nothing.
   */
  def completeIn: ConnectionIO[Boolean] = life.complete

  /**
   * The tasks this one waited for ([[NewTask.after]], [[TaskGraph]]), in the order its enqueue named them,
   * each with its state and its stored result (see [[Parent]]): one read, run in the caller's transaction
   * (`job.parents.transact(db.transactor)`). Empty for a task enqueued without parents.
   */
  def parents: ConnectionIO[Vector[Parent]] = life.parents(id)

  /**
   * The batch of this task ([[Batches]]): for a batch's callback, the batch it ended with (its counts final:
   * how many members completed, ended dead, were cancelled); for a member, its batch as it stands (a member
   * may add tasks to its own batch, or close it). One read, run in the caller's transaction
   * (`job.batch.transact(db.transactor)`); `None` for a task in no batch.
   */
  def batch: ConnectionIO[Option[BatchProgress]] = life.batch(id)

  /**
   * The answer of a handler that cannot do its work yet (an upstream asks to come back later, a resource is
   * not ready): returned as its value, under [[DurableWorker.startSnoozing]], it puts this task back in its
   * queue, available once the database's clock is `after` past the moment the worker writes it, its attempt
   * not counted and its errors unchanged (see [[Handled.Snoozed]]). A negative `after` fails the attempt
   * with an error naming it.
   */
  def snooze(after: FiniteDuration): Handled[Nothing] = Handled.Snoozed(after)

  override def toString: String = s"Job($queue#$id, attempt $attempt/$maxAttempts, $payload)"

object Job:

  /**
   * A job that no worker claimed, for a handler's tests (weir-testkit-postgres's `TestJob` builds them):
   * its [[completeIn]] is `completeIn`, its [[tryStart]] answers `refusal()` unless `interruption` was requested
   * (then, as a claimed job's, `cancelled: <reason>`), its interruption is `interruption`, and its [[parents]]
   * are `parents`, its [[batch]] `batch`. Nothing of it touches a database unless `completeIn`, `parents` or
   * `batch` does; no worker ever finishes it.
   */
  def detached[A](
      id: Long,
      queue: String,
      payload: A,
      attempt: Int,
      maxAttempts: Int,
      priority: Int,
      orderingKey: Option[String],
      createdAt: Instant,
      headers: Map[String, String],
      completeIn: ConnectionIO[Boolean],
      refusal: () => Option[String],
      interruption: Interruption,
      parents: ConnectionIO[Vector[Parent]] = FC.pure(Vector.empty),
      batch: ConnectionIO[Option[BatchProgress]] = FC.pure(None)
  ): Job[A] =
    new Job(
      id,
      queue,
      payload,
      attempt,
      maxAttempts,
      priority,
      orderingKey,
      createdAt,
      headers,
      0L,
      new Detached(completeIn, refusal, interruption, parents, batch)
    )

  /**
   * A job's claim as its job sees it: asked before each attempt, registered around them, completed in its
   * handler's transaction, and ended by its outcome (a worker's claims are [[weir.Tracked]] items).
   */
  private[postgres] trait Life:
    def tryStart(): Option[String]
    def onInterrupt(interrupt: String => Unit): () => Unit
    def complete: ConnectionIO[Boolean]
    def parents(id: Long): ConnectionIO[Vector[Parent]]
    def batch(id: Long): ConnectionIO[Option[BatchProgress]]
    def done(outcome: TaskOutcome[?, ?]): Boolean

  /** What every claim of one worker shares: its statements, and its liveness in memory. */
  private[postgres] final class Claimed(sql: Sql, keepCompleted: Boolean, val liveness: Liveness):
    private val graphs = new GraphSql(sql.schema)
    private val batches = new BatchSql(sql.schema)
    def complete(token: Long, keyed: Boolean): ConnectionIO[Boolean] =
      sql.complete(Array(token), keepCompleted, keyed).map(_ == 1)
    def parents(id: Long): ConnectionIO[Vector[Parent]] = graphs.parentsOf(id)
    def batch(id: Long): ConnectionIO[Option[BatchProgress]] = batches.ofTask(id)

  private final class Detached(
      completeIn: ConnectionIO[Boolean],
      answer: () => Option[String],
      stop: Interruption,
      parentsIn: ConnectionIO[Vector[Parent]],
      batchIn: ConnectionIO[Option[BatchProgress]]
  ) extends Life:
    def parents(id: Long): ConnectionIO[Vector[Parent]] = parentsIn
    def batch(id: Long): ConnectionIO[Option[BatchProgress]] = batchIn
    def tryStart(): Option[String] =
      stop.requested match
        case None => answer()
        case Some(reason) => Some(s"cancelled: $reason")
    def onInterrupt(interrupt: String => Unit): () => Unit =
      stop.onInterrupt(reason => interrupt(s"cancelled: $reason"))
    def complete: ConnectionIO[Boolean] = completeIn
    def done(outcome: TaskOutcome[?, ?]): Boolean = false
