package weir.postgres

import java.time.Instant
import scala.concurrent.duration.FiniteDuration

/**
 * One queue's tasks by [[TaskState]] ([[QueueOverview.counts]]): the live ones exactly, and the finished
 * ones counted up to a cap (`finished` holds every [[FinishedState]]), with how long its oldest available
 * task has been due.
 */
final case class QueueCounts(
    queue: String,
    available: Long,
    scheduled: Long,
    waiting: Long,
    running: Long,
    finished: Map[FinishedState, CappedCount],
    oldestAvailable: Option[FiniteDuration]
)

/** The tasks of one minute (`at`, its start) that completed, and that died ([[QueueOverview.throughput]]). */
final case class FinishedPerMinute(at: Instant, completed: Long, dead: Long)
