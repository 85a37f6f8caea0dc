package weir.postgres

/**
 * What one worker process has done so far: tasks claimed, and how their claims ended as written to the
 * database (completed, retried later, dead, handed back unstarted), tasks it rescued from dead workers,
 * and database errors it rode out (each retried; `lastError` is the latest).
 */
final case class WorkerStats(
    claimed: Long = 0,
    completed: Long = 0,
    retried: Long = 0,
    dead: Long = 0,
    released: Long = 0,
    rescued: Long = 0,
    databaseErrors: Long = 0,
    lastError: Option[Throwable] = None
)
