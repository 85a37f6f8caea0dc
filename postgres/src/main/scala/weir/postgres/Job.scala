package weir.postgres

import doobie.ConnectionIO
import weir.postgres.internal.Sql

import java.time.Instant

/**
 * A task a worker has claimed: what its handler receives.
 *
 * `attempt` counts from 1 and includes this one; `maxAttempts` is the task's own limit. `headers` are the
 * ones the task was enqueued with ([[NewTask.headers]]), the same on every attempt; empty for a task
 * enqueued without any, or by a release before they existed. [[completeIn]] finishes the task inside the
 * handler's own transaction (see there).
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
    keepCompleted: Boolean
):

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

  override def toString: String = s"Job($queue#$id, attempt $attempt/$maxAttempts, $payload)"
