package weir.postgres

/**
 * What a [[Database]] has ridden out outside its workers, since it was opened ([[Database.stats]]):
 * `deadlocksRetried`, the runs of operators' actions (cancels, retries, discards, a workflow's or batch's
 * cancel, a batch's close) that the server aborted as deadlocks against a worker's statements and that
 * were run again. Each is also logged once, at WARN, on the logger `weir.postgres.actions`.
 */
final case class DatabaseStats(deadlocksRetried: Long)
