package weir.postgres

import doobie.ConnectionIO
import weir.{Interruptible, Interruption}
import weir.postgres.internal.{Liveness, Sql}

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
 * A job is [[weir.Interruptible]]: when an operator cancels it ([[TaskAdmin.cancel]]), its worker hears
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
    sql: Sql,
    keepCompleted: Boolean,
    liveness: Liveness,
    interruption: Interruption
) extends Interruptible:

  /**
   * Why this claim must not start: its cancel was requested, another worker rescued it, or this worker's
   * heartbeat is too late to be sure none did (see [[weir.postgres.WorkerStats.refused]]); `None` when it
   * may start.
   */
  def refusal: Option[String] =
    interruption.requested match
      case None => liveness.refusal(token)
      case Some(reason) => Some(s"cancelled: $reason")

  /** Registers the engine's interruption of this job's attempt: see [[weir.Interruptible]]. */
  def onInterrupt(interrupt: String => Unit): () => Unit =
    interruption.onInterrupt(reason => interrupt(s"cancelled: $reason"))

  /**
   * Completes this task as part of the caller's transaction: the handler's own writes and the completion
   * commit together or not at all, so a handler that writes to weir's database has exactly-once effects
   * there. True if this claim completed the task; false if it no longer held it (it was rescued after a
   * lost heartbeat, for instance): then the caller should roll back.
   *
   * The pipeline's later acknowledgement of the same task changes nothing.
   */
  def completeIn: ConnectionIO[Boolean] =
    sql.complete(Array(token), keepCompleted, keyed = orderingKey.isDefined).map(_ == 1)

  /**
   * The answer of a handler that cannot do its work yet (an upstream asks to come back later, a resource is
   * not ready): returned as its value, under [[DurableWorker.startSnoozing]], it puts this task back in its
   * queue, available once the database's clock is `after` past the moment the worker writes it, its attempt
   * not counted and its errors unchanged (see [[Handled.Snoozed]]). A negative `after` fails the attempt
   * with an error naming it.
   */
  def snooze(after: FiniteDuration): Handled[Nothing] = Handled.Snoozed(after)

  override def toString: String = s"Job($queue#$id, attempt $attempt/$maxAttempts, $payload)"
