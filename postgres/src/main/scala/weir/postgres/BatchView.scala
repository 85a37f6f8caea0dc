package weir.postgres

/**
 * A batch as it stands ([[TaskBrowser.batch]]), read in one statement: its [[BatchProgress]], the state of
 * its callback task (`None` once its row is gone: completed without being kept, or pruned), and a page of
 * its members in id order, strictly after the position the read was given; `next` is where the next page
 * starts, `None` after the last. A batch may hold many thousands of members: a read lists at most its
 * limit, and the progress counts them all.
 *
 * A member is listed while its row is kept: live, or finished (kept whatever `keepCompleted` says, until it
 * is pruned; migration 14). A member that an operator retried left the batch (its end was counted) and is
 * no longer listed.
 */
final case class BatchView(
    progress: BatchProgress,
    callbackState: Option[TaskState],
    members: Vector[BatchMember],
    next: Option[Long]
)

/**
 * A member of a batch: its id, queue and state, its attempt and attempts allowed, whether it completed with
 * a stored result, and its workflow, if it is in one.
 */
final case class BatchMember(
    id: Long,
    queue: String,
    state: TaskState,
    attempt: Int,
    maxAttempts: Int,
    result: Boolean,
    workflow: Option[WorkflowId]
)
