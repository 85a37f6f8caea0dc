package weir.postgres

import scala.concurrent.duration.*

/**
 * A task to enqueue: its payload and how it is to run.
 *
 *   - `priority`: lower runs first (default 0); within a priority, earlier run-at first, then enqueue order.
 *   - `delay`: the task is not claimed before the database's clock has moved on by `delay` (default: now).
 *   - `maxAttempts`: attempts in all before the task is dead (default 20, at least 1).
 *   - `orderingKey`: tasks of a queue with the same key run one at a time in enqueue order, whichever
 *     worker claims them (see the guide's per-key section for what a failing head does).
 *   - `uniqueKey`: while a task of the queue with this key has not finished, enqueueing another is a
 *     no-op that returns the holder's id ([[Enqueued.Duplicate]]).
 */
final case class NewTask[+A](
    payload: A,
    priority: Int = 0,
    delay: FiniteDuration = Duration.Zero,
    maxAttempts: Int = NewTask.defaultMaxAttempts,
    orderingKey: Option[String] = None,
    uniqueKey: Option[String] = None
):
  require(
    priority >= Short.MinValue && priority <= Short.MaxValue,
    s"priority must fit in a smallint, was: $priority"
  )
  require(delay >= Duration.Zero, s"delay must be >= 0, was: $delay")
  require(maxAttempts >= 1, s"maxAttempts must be >= 1, was: $maxAttempts")
  require(orderingKey.forall(_.nonEmpty), "orderingKey must not be empty, was: \"\"")
  require(uniqueKey.forall(_.nonEmpty), "uniqueKey must not be empty, was: \"\"")

object NewTask:
  /** Attempts in all unless a task says otherwise (the SQL function's default too). */
  val defaultMaxAttempts: Int = 20

/** What an enqueue did. */
enum Enqueued:
  /** A new task, with its id. */
  case Inserted(id: Long)

  /** Nothing was inserted: the unfinished task `heldBy` holds the same unique key. */
  case Duplicate(heldBy: Long)

  /** The id of the task that now stands for the enqueued one. */
  def taskId: Long = this match
    case Inserted(id) => id
    case Duplicate(heldBy) => heldBy
