package weir.postgres

/** One queue's tasks by state: ready to run now, scheduled later, running, and finished ones still kept. */
final case class QueueStats(
    queue: String,
    available: Long,
    scheduled: Long,
    running: Long,
    completed: Long,
    dead: Long,
    cancelled: Long
)
