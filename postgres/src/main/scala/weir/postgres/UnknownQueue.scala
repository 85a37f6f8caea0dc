package weir.postgres

/**
 * A control was set on a queue the database does not know: no task of it was ever enqueued (or all were
 * pruned), no worker has served it and no control was set on it. [[QueueControls.add]] makes it known.
 */
final class UnknownQueue(val queue: String)
    extends IllegalArgumentException(
      s"unknown queue '$queue': it has no tasks and no worker has served it (QueueControls.add declares it)"
    )
