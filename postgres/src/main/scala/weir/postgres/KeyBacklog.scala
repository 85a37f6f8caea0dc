package weir.postgres

import java.time.Instant

/**
 * An ordering key with tasks waiting ([[TaskBrowser.keys]]): its live tasks in `queue` (`backlog`, capped),
 * and its head, the task that runs next, with the head's state, attempts and enqueue time. A key is
 * `blocked` when its head has failed at least once and others wait behind it.
 */
final case class KeyBacklog(
    queue: String,
    key: String,
    backlog: CappedCount,
    head: Long,
    headState: TaskState,
    headAttempt: Int,
    headCreatedAt: Instant,
    blocked: Boolean
)
