package weir

import scala.concurrent.duration.*

/**
 * The result of a whole run.
 *
 * Accounting: `received == succeeded + failed + notStarted` always holds. `failed` counts every failed task
 * and `dispositions` counts them by what became of them; `failures` keeps only the last of them, at most
 * the pipeline's failure sample ([[Pipeline.withFailureSample]], default [[Defaults.failureSample]]), oldest
 * first, so that a run of any length keeps a bounded summary: the full record of failures is the outcomes
 * stream ([[Pipeline.outcomes]]), or the dead-letter sink. `unstarted` holds every task that never started
 * (those a stop found waiting: at most the buffer's capacity and a chunk per producer), except those that
 * refused to ([[Refusable]]), which are only counted, in `refused` (so `notStarted == unstarted.size +
 * refused`). `retries` counts attempts beyond each task's first, `timeouts` the attempts that hit the task
 * timeout. `queueWait`, for a pipeline
 * built with [[Pipeline.withQueueWaits]], is how long the tasks that started waited for it: from entering
 * the buffer to the start of their first attempt.
 */
final case class Summary[+A](
    received: Long,
    succeeded: Long,
    failed: Long,
    notStarted: Long,
    failures: Vector[TaskOutcome.Failed[A, Nothing]],
    unstarted: Vector[A],
    elapsed: FiniteDuration,
    latency: Latency,
    stop: StopReason,
    retries: Long,
    timeouts: Long,
    queueWait: Option[Latency] = None,
    refused: Long = 0,
    dispositions: Map[Disposition, Long] = Map.empty
):

  /** Completed tasks (succeeded or failed) per second of wall time. */
  def throughput: Double =
    val seconds = elapsed.toNanos.toDouble / 1e9
    if seconds <= 0 then 0.0 else (succeeded + failed).toDouble / seconds

  /** True when every received task succeeded and the run was not stopped early. */
  def allSucceeded: Boolean = succeeded == received && stop == StopReason.Completed

  override def toString: String =
    f"Summary(received=$received, succeeded=$succeeded, failed=$failed, notStarted=$notStarted, " +
      f"retries=$retries, timeouts=$timeouts, elapsed=${elapsed.toMillis}ms, throughput=$throughput%.1f/s, latency=$latency, " +
      queueWait.fold("")(w => s"queueWait=$w, ") + s"stop=$stop)"

/** Why a run ended. */
enum StopReason:
  /** The sources were exhausted and every task ran. */
  case Completed

  /** [[Running.drain]] was called. */
  case Drained

  /** A task failed under [[FailurePolicy.failFast]]. */
  case FailedFast(error: Throwable)

  /** The run was released (its resource, or `run` cancelled) without a drain. */
  case Released

  /**
   * A producer's stream failed (further failures are suppressed on this one). The other producers ran on,
   * and every task already received was processed.
   */
  case SourceFailed(error: Throwable)

/** Latency of the tasks that ran (from start to the end of the handler), over the whole run. */
final case class Latency(
    count: Long,
    mean: FiniteDuration,
    p50: FiniteDuration,
    p90: FiniteDuration,
    p99: FiniteDuration,
    p999: FiniteDuration,
    max: FiniteDuration
):
  override def toString: String =
    def ms(d: FiniteDuration) = f"${d.toNanos / 1e6}%.3f"
    s"Latency(n=$count, mean=${ms(mean)}ms, p50=${ms(p50)}ms, p99=${ms(p99)}ms, max=${ms(max)}ms)"

object Latency:
  val empty: Latency =
    Latency(
      count = 0,
      mean = Duration.Zero,
      p50 = Duration.Zero,
      p90 = Duration.Zero,
      p99 = Duration.Zero,
      p999 = Duration.Zero,
      max = Duration.Zero
    )
