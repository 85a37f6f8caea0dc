package weir.postgres

import java.time.Instant

/**
 * A page of the task list ([[TaskBrowser.tasks]]): its rows in the list's order, where the next page starts
 * (none on the last page), and, when the page stopped searching before it was full, where that search
 * stopped: the tasks after `scannedTo` are still to be searched, and `next` is that same position.
 */
final case class TaskPage(rows: Vector[TaskRow], next: Option[TaskCursor], scannedTo: Option[TaskCursor])

/**
 * A task as the list shows it: live (`finishedAt` empty) or finished, in its [[TaskState]], with its
 * attempts so far out of `maxAttempts`, and its payload's JSON text.
 */
final case class TaskRow(
    id: Long,
    queue: String,
    state: TaskState,
    priority: Int,
    key: Option[String],
    attempt: Int,
    maxAttempts: Int,
    createdAt: Instant,
    finishedAt: Option[Instant],
    payload: String
)
