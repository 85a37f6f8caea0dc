package weir.postgres

/**
 * What one worker process has done so far: tasks claimed, and how their claims ended as written to the
 * database (completed, retried later, dead, handed back unstarted, snoozed by their handlers: see
 * [[Job.snooze]]), tasks it rescued from dead workers,
 * and database errors it rode out (each retried; `lastError` is the latest).
 *
 * `heldBack` counts this worker's claims that its queue's controls held back (paused, its limit on running
 * tasks reached, or its rate's tokens spent: see [[TaskAdmin]]).
 *
 * `taken` counts this worker's claims that another worker rescued while this one was alive: it had been
 * silent for `deadAfter` (a long pause, a starved CPU, a partition) and was taken for dead. Those tasks
 * may run twice, here and there; a non-zero `taken` says `deadAfter` is too short for this worker's pauses.
 *
 * `cancelled` counts this worker's claims whose cancel was requested ([[TaskActions.cancel]]) and that it
 * finished as cancelled: interrupted while they ran, or refused before they started. Its rescues of dead
 * workers' tasks count in `rescued`, whatever they became.
 *
 * `refused` counts the claims this worker refused to start, handed back uncounted: another worker had
 * rescued them, or this worker's heartbeat was too late for it to be sure none had (a claim starts only
 * while the last heartbeat that committed is younger than three quarters of a heartbeat period). So a
 * claim taken from this worker never starts here, whatever `taken` says of the ones already running.
 */
final case class WorkerStats(
    claimed: Long = 0,
    heldBack: Long = 0,
    completed: Long = 0,
    retried: Long = 0,
    dead: Long = 0,
    cancelled: Long = 0,
    handedBack: Long = 0,
    snoozed: Long = 0,
    rescued: Long = 0,
    taken: Long = 0,
    refused: Long = 0,
    databaseErrors: Long = 0,
    lastError: Option[Throwable] = None
)
