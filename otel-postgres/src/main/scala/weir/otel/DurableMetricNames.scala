package weir.otel

/**
 * The metrics [[DurableMetrics]] exports, beside [[MetricNames]]' engine metrics. The worker counters are
 * cumulative and summed over the workers of one queue in this process (ended ones included); each carries
 * `weir.queue.name`. The queue depths come from the process's one shared count ([[weir.postgres.QueueDepths]])
 * and are the database's, whichever process reports them: gauges, not to be summed across processes.
 *
 * | metric | instrument | unit | attributes | what |
 * |---|---|---|---|---|
 * | `weir.durable.claimed` | counter | `{task}` | queue | tasks claimed |
 * | `weir.durable.held_back` | counter | `{claim}` | queue | claims the queue's controls held back (paused, limit, rate) |
 * | `weir.durable.completed` | counter | `{task}` | queue | claims finished as completed |
 * | `weir.durable.retried` | counter | `{task}` | queue | claims failed and made available again for a retry |
 * | `weir.durable.dead` | counter | `{task}` | queue | claims failed for good (dead) |
 * | `weir.durable.cancelled` | counter | `{task}` | queue | claims finished as cancelled |
 * | `weir.durable.handed_back` | counter | `{task}` | queue | claims handed back unstarted (refused ones included) |
 * | `weir.durable.snoozed` | counter | `{task}` | queue | claims snoozed by their handler |
 * | `weir.durable.refused` | counter | `{task}` | queue | claims refused at their start (taken, or a late heartbeat) |
 * | `weir.durable.rescued` | counter | `{task}` | queue | dead workers' tasks this process rescued |
 * | `weir.durable.taken` | counter | `{task}` | queue | this process's claims rescued by another worker while it lived |
 * | `weir.durable.database_errors` | counter | `{error}` | queue | database errors ridden out (each retried) |
 * | `weir.durable.action_deadlocks` | counter | `{run}` | (none) | runs of operators' actions the server aborted as deadlocks, each run again (with a `Database` given) |
 * | `weir.queue.depth` | gauge | `{task}` | queue, `weir.task.state` | tasks in the queue by state, at the last count |
 * | `weir.queue.oldest_age` | gauge | `s` | queue | how long the oldest available task has been due (0 when none is) |
 * | `weir.queue.depth.failures` | counter | `{count}` | (none) | shared counts that failed (the gauges keep the last one) |
 *
 * `weir.task.state` is `available`, `scheduled`, `waiting`, `running`, and the finished states counted:
 * `dead` and `cancelled` by default, `completed` when asked for (see [[weir.postgres.QueueDepths.Settings]]).
 */
object DurableMetricNames:
  val Claimed = "weir.durable.claimed"
  val HeldBack = "weir.durable.held_back"
  val Completed = "weir.durable.completed"
  val Retried = "weir.durable.retried"
  val Dead = "weir.durable.dead"
  val Cancelled = "weir.durable.cancelled"
  val HandedBack = "weir.durable.handed_back"
  val Snoozed = "weir.durable.snoozed"
  val Refused = "weir.durable.refused"
  val Rescued = "weir.durable.rescued"
  val Taken = "weir.durable.taken"
  val DatabaseErrors = "weir.durable.database_errors"
  val ActionDeadlocks = "weir.durable.action_deadlocks"
  val Depth = "weir.queue.depth"
  val OldestAge = "weir.queue.oldest_age"
  val DepthFailures = "weir.queue.depth.failures"

  /** The attribute of [[Depth]] naming the state. */
  val State = "weir.task.state"
