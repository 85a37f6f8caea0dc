package weir.postgres

import java.time.Instant

/**
 * One task, live or finished ([[TaskBrowser.task]]): where it stands and everything stored with it.
 *
 * @param runAt when a live task is due (none for a finished one)
 * @param finishedAt when a finished task finished (none for a live one)
 * @param worker the worker that runs a running task, or that ran the attempt a finished task finished with
 *   (none for a task cancelled before it ran, and for one finished by a worker before migration 9)
 * @param cancelRequested the reason of a cancel requested while it runs ([[TaskAdmin.cancel]])
 * @param payload the payload's JSON text
 * @param headers its headers ([[NewTask]]), none when it has none
 * @param errors each failed attempt's error, oldest first, a cancel's reason among them
 * @param workflow the workflow it is in ([[TaskBrowser.workflow]]), if any: its own, or its id when it is the
 *   first task of one
 * @param batch the batch it is a member or the callback of ([[TaskBrowser.batch]]), if any
 */
final case class TaskDetail(
    id: Long,
    queue: String,
    state: TaskState,
    priority: Int,
    key: Option[String],
    uniqueKey: Option[String],
    attempt: Int,
    maxAttempts: Int,
    createdAt: Instant,
    runAt: Option[Instant],
    finishedAt: Option[Instant],
    worker: Option[Long],
    cancelRequested: Option[String],
    payload: String,
    headers: Map[String, String],
    errors: Vector[AttemptError],
    workflow: Option[WorkflowId] = None,
    batch: Option[BatchId] = None
)

/**
 * One entry of a task's errors: the attempt it ended, when, on which worker, and the error's text (its
 * class, message and causes; `cancelled: <reason>` for a cancel). A field an entry lacks (one written by an
 * earlier release, say) is `None`; an entry without an error's text gives its whole JSON text.
 */
final case class AttemptError(attempt: Option[Int], at: Option[Instant], worker: Option[Long], error: String)

/**
 * The tasks of a task's ordering key around it ([[TaskBrowser.neighbours]]), in the order they run: those
 * `before` it, which run first, and those `after` it. Finished tasks have left the key.
 */
final case class KeyNeighbours(before: Vector[KeyNeighbour], after: Vector[KeyNeighbour])

object KeyNeighbours:
  /** Neither: a task without a key. */
  val none: KeyNeighbours = KeyNeighbours(Vector.empty, Vector.empty)

/** A live task of a key, as [[KeyNeighbours]] lists it. */
final case class KeyNeighbour(id: Long, state: TaskState, attempt: Int, createdAt: Instant)
