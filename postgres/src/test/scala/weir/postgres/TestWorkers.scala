package weir.postgres

import cats.effect.{IO, Resource}
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
      // long enough that a heartbeat held up on a loaded test machine is not taken for a death: the tests
      // that count runs would see the rescued claims of a live worker run twice
      deadAfter = 3.seconds,
      lease = 5.seconds,
      backoff = retryAtOnce,
      keepCompleted = true,
      stopWhenEmpty = true
    )

  /**
   * Runs `worker` until its run ends (with `stopWhenEmpty`, once the queue has nothing unfinished) and
   * returns its stats once it is released: a batch's counts are added after its transaction returns, so the
   * claimer can see the queue empty, and the run end, before the last batch is counted.
   */
  def statsAfterRun[A](worker: Resource[IO, DurableWorker[IO, A]]): IO[WorkerStats] =
    worker.use(w => w.running.join.as(w)).flatMap(_.stats)
