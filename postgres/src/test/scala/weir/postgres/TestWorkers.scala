package weir.postgres

import weir.Retry

import scala.concurrent.duration.*

/** Worker settings for tests: short timings, retries at once, completed tasks kept for counting. */
object TestWorkers:

  val retryAtOnce: Retry =
    Retry.exponential(base = Duration.Zero, maxAttempts = Int.MaxValue, maxDelay = Duration.Zero)

  /** The logic is the same at any scale; tests run it fast and stop when the queue is empty. */
  def config(queue: String): WorkerConfig =
    WorkerConfig(
      queue = queue,
      claimBatch = 20,
      pollInterval = 50.millis,
      heartbeat = 200.millis,
      deadAfter = 1.second,
      lease = 5.seconds,
      backoff = retryAtOnce,
      keepCompleted = true,
      stopWhenEmpty = true
    )
