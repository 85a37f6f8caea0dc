package weir.postgres

import java.time.Instant

/**
 * A batch as it stands ([[Batches.progress]], and a callback's or a member's [[Job.batch]]): its id and its
 * callback task's; how many members it has and how many of them have ended, by outcome; when it was
 * opened, closed and ended (closed with every member ended: its callback released). Once it has ended its
 * counts never change, so a callback reads what its batch ended with.
 *
 * A member's end is counted once, at its first end, whoever ends it (a worker, a rescue, an operator):
 * `completed` (its row kept in `finished`: migration 14), `dead` (its attempts used up, or failed for good)
 * or `cancelled` (by an operator, by the batch's cancel, or with a parent it needed).
 */
final case class BatchProgress(
    id: BatchId,
    callback: Long,
    members: Long,
    completed: Long,
    dead: Long,
    cancelled: Long,
    createdAt: Instant,
    closedAt: Option[Instant],
    endedAt: Option[Instant]
):

  /** Members that have ended, whatever their outcome. */
  def finished: Long = completed + dead + cancelled

  /** Members that have not ended yet. */
  def pending: Long = members - finished

  /** No member can be added any more. */
  def closed: Boolean = closedAt.isDefined

  /** Closed, with every member ended: the callback has been released. */
  def ended: Boolean = endedAt.isDefined

  /** Ended, with every member completed (an empty batch too). */
  def succeeded: Boolean = ended && completed == members
