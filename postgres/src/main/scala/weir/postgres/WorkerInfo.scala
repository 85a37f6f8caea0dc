package weir.postgres

/**
 * A registered worker: its id (the lease owner of its tasks), its name, when it started and last
 * heartbeated, whether its session holds the worker's lock (false with notifications off, or while its
 * session reconnects), and how many tasks it has running.
 */
final case class WorkerInfo(
    id: Long,
    name: String,
    startedAt: java.time.Instant,
    heartbeatAt: java.time.Instant,
    sessionHeld: Boolean,
    running: Long
)
