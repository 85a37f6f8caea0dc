package weir

import scala.concurrent.duration.FiniteDuration

/**
 * A point-in-time reading of a running pipeline's counters, cheap to take (a handful of atomic
 * reads). Counters only grow; `inFlight`, `buffered`, `limit` and `workers` are gauges.
 *
 * `received` counts tasks taken from the sources; `started` tasks whose handler began; `retries` the
 * attempts beyond each task's first; `timeouts` the attempts that hit the task timeout; `rateLimited` the
 * attempts that waited for a rate-limit permit (one granted at once is not counted); `dispositions` the
 * failed tasks by what became of them (every [[Disposition]] is a key); `wakeUps` the times a worker found no
 * task to take, parked, and was woken (by a task, or to look again): each resumes a fiber, so `wakeUps` well
 * under `started` means the workers met a backlog, and close to it that each task woke an idle worker. At any instant
 * `received == buffered + inFlight + succeeded + failed + notStarted` and the dispositions sum to `failed`,
 * up to the tasks being moved between two of these states while the snapshot is read.
 */
final case class Snapshot(
    elapsed: FiniteDuration,
    received: Long,
    started: Long,
    succeeded: Long,
    failed: Long,
    notStarted: Long,
    inFlight: Long,
    buffered: Long,
    limit: Int,
    workers: Int,
    retries: Long,
    timeouts: Long,
    rateLimited: Long,
    dispositions: Map[Disposition, Long],
    wakeUps: Long = 0L
):
  /** Tasks that have reached an outcome. */
  def finished: Long = succeeded + failed + notStarted
