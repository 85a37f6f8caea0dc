package weir.otel

import weir.Disposition

/**
 * The metrics [[WeirMetrics]] exports, named in OpenTelemetry's semantic-convention style, with their
 * attributes. Counters are cumulative; `{task}` and `{attempt}` are annotations of the unit 1.
 *
 * | metric | instrument | unit | what |
 * |---|---|---|---|
 * | `weir.task.received` | counter | `{task}` | tasks taken from the sources (submitted) |
 * | `weir.task.started` | counter | `{task}` | tasks whose handler began |
 * | `weir.task.finished` | counter | `{task}` | tasks that reached an outcome, by `weir.task.outcome` |
 * | `weir.task.retries` | counter | `{attempt}` | attempts beyond each task's first |
 * | `weir.task.timeouts` | counter | `{attempt}` | attempts that hit the task timeout |
 * | `weir.task.rate_limited` | counter | `{attempt}` | attempts that waited for a rate-limit permit |
 * | `weir.task.in_flight` | up-down counter | `{task}` | tasks running now |
 * | `weir.buffer.size` | up-down counter | `{task}` | tasks waiting in the buffer |
 * | `weir.concurrency.limit` | gauge | `{task}` | the concurrency limit now (adaptive ones move) |
 * | `weir.workers` | up-down counter | `{worker}` | worker fibers alive |
 * | `weir.worker.wake_ups` | counter | `{wake-up}` | times a worker found no task, parked, and was woken |
 * | `weir.task.duration` | histogram | `s` | each task from its start to the end of its handler, retries included |
 * | `weir.task.queue_wait` | histogram | `s` | each started task from entering the buffer to its start (pipelines built `withQueueWaits`) |
 *
 * `weir.task.outcome` is `succeeded`, `not_started`, or a failed task's [[Disposition]]: `skipped`,
 * `dead_lettered`, `dead_letter_failed`, `aborted` (the failure that stopped a fail-fast run),
 * `interrupted`. Every metric has `weir.pipeline.name` and, for a durable queue, `weir.queue.name`.
 */
object MetricNames:
  val Received = "weir.task.received"
  val Started = "weir.task.started"
  val Finished = "weir.task.finished"
  val Retries = "weir.task.retries"
  val Timeouts = "weir.task.timeouts"
  val RateLimited = "weir.task.rate_limited"
  val InFlight = "weir.task.in_flight"
  val Buffered = "weir.buffer.size"
  val Limit = "weir.concurrency.limit"
  val Workers = "weir.workers"
  val WakeUps = "weir.worker.wake_ups"
  val Duration = "weir.task.duration"
  val QueueWait = "weir.task.queue_wait"

  val PipelineName = "weir.pipeline.name"
  val QueueName = "weir.queue.name"
  val Outcome = "weir.task.outcome"

  /** The value of [[Outcome]] for each way a task ends. */
  val Succeeded = "succeeded"
  val NotStarted = "not_started"

  def outcome(d: Disposition): String =
    d match
      case Disposition.Skipped => "skipped"
      case Disposition.DeadLettered => "dead_lettered"
      case Disposition.DeadLetterFailed => "dead_letter_failed"
      case Disposition.Aborted => "aborted"
      case Disposition.Interrupted => "interrupted"
