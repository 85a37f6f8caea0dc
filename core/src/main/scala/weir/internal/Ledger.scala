package weir.internal

import weir.{Disposition, DurationHistogram, Snapshot, StopReason, Summary, TaskOutcome}

import java.util.concurrent.atomic.{AtomicReference, LongAdder}
import scala.concurrent.duration.FiniteDuration

/**
 * The accounts of one run: counters for every transition a task makes, the last `failureSample` failed
 * tasks and the unstarted ones themselves, the task latencies, and the queue waits when the run measures them (`measured`). Every
 * method is a plain call, safe from any thread, to be made inside an effect (the worker's and the
 * producer's fast paths make them in their continuations, the stages in `F.delay`): a counter is a
 * `LongAdder` increment, a latency a plain write to the recording thread's own histogram
 * ([[LatencyRecorder]]), so the ledger is always on.
 *
 * Received tasks are counted here when offered, and by the buffer's inlet when placed there
 * ([[UnsafeInlet.placed]], which the reader passes in): a placement makes no locked write, and an increment
 * here would be the one it makes, waiting each time for the inlet's counter to reach the takers' cores.
 *
 * Invariant at the end of a run: `received == succeeded + failed + notStarted`.
 *
 * Bounds: the counters and histograms are of constant size; the failures kept are at most `failureSample`;
 * the unstarted tasks are those a stop found in the buffer or in the sources' current chunks, so at most the
 * buffer's capacity plus a chunk per producer.
 */
private[weir] final class Ledger[A](measured: Boolean, failureSample: Int):
  private val receivedN = new LongAdder
  private val startedN = new LongAdder
  private val succeededN = new LongAdder
  private val failedN = new LongAdder
  private val notStartedN = new LongAdder
  private val refusedN = new LongAdder
  private val retriedN = new LongAdder
  private val timedOutN = new LongAdder
  private val rateLimitedN = new LongAdder
  private val failedAs = Array.fill(Disposition.values.length)(new LongAdder) // by disposition ordinal
  private val latencies = new LatencyRecorder
  private val queueWaits = if measured then Some(new LatencyRecorder) else None
  private val failures = new RecentFailures[A](failureSample)
  // a value replaced by compare-and-set, so a batch of not-started tasks is added as one
  private val unstarted = new AtomicReference(Vector.empty[A])

  /**
   * `n` tasks received by an offer (negative: a count taken back, for tasks an offer did not place after all);
   * the inlet counts its placements itself.
   */
  def received(n: Int): Unit = receivedN.add(n.toLong)
  def started(): Unit = startedN.increment()
  def retried(): Unit = retriedN.increment()
  def timedOut(): Unit = timedOutN.increment()

  /** An attempt waited for a rate-limit permit. */
  def rateLimited(): Unit = rateLimitedN.increment()

  def succeeded(latencyNanos: Long): Unit =
    succeededN.increment()
    latencies.record(latencyNanos)

  def failed(failure: TaskOutcome.Failed[A, Nothing], latencyNanos: Long): Unit =
    failedN.increment()
    failedAs(failure.disposition.ordinal).increment()
    latencies.record(latencyNanos)
    failures.add(failure)

  /** A task started `nanos` after it entered the buffer (only called when the run measures queue waits). */
  def waited(nanos: Long): Unit =
    queueWaits match
      case Some(recorder) => recorder.record(nanos) // no closure: this runs once per task that starts
      case None => ()

  /** A task that refused to start: counted, not kept (its outcome is published when it refuses). */
  def refused(): Unit =
    notStartedN.increment()
    refusedN.increment()

  def notStarted(tasks: Iterable[A]): Unit =
    if tasks.nonEmpty then
      notStartedN.add(tasks.size.toLong)
      val _ = unstarted.updateAndGet(_ ++ tasks)

  /**
   * The counters now, with the gauges the ledger does not keep and the tasks `placed` in the buffer's inlet.
   * Each counter is read once; a task moving between two states while they are read may show in neither or in
   * both. Received is read last, so it is never below started.
   */
  def snapshot(elapsed: FiniteDuration, buffered: Int, limit: Int, workers: Int, parks: Long, placed: => Long)
      : Snapshot =
    val started = startedN.sum
    val succeeded = succeededN.sum
    val failed = failedN.sum
    Snapshot(
      elapsed = elapsed,
      received = receivedN.sum + placed,
      started = started,
      succeeded = succeeded,
      failed = failed,
      notStarted = notStartedN.sum,
      inFlight = started - succeeded - failed, // every failed task had started
      buffered = buffered.toLong,
      limit = limit,
      workers = workers,
      retries = retriedN.sum,
      timeouts = timedOutN.sum,
      rateLimited = rateLimitedN.sum,
      dispositions = dispositions,
      wakeUps = parks
    )

  private def dispositions: Map[Disposition, Long] =
    Disposition.values.iterator.map(d => d -> failedAs(d.ordinal).sum).toMap

  /** The latencies recorded so far (see [[LatencyRecorder.histogram]]). */
  def latencyHistogram: DurationHistogram = new DurationHistogram(latencies.histogram)

  /** The queue waits recorded so far, if the run measures them. */
  def queueWaitHistogram: Option[DurationHistogram] = queueWaits.map(r => new DurationHistogram(r.histogram))

  /**
   * The run's summary, with the tasks `placed` in the buffer's inlet. Read it once every task is recorded: the
   * latencies are read without synchronisation (see [[LatencyRecorder]]), and the read lets their histograms go.
   */
  def summary(elapsed: FiniteDuration, stop: StopReason, placed: Long): Summary[A] =
    Summary(
      received = receivedN.sum + placed,
      succeeded = succeededN.sum,
      failed = failedN.sum,
      notStarted = notStartedN.sum,
      failures = failures.toVector,
      unstarted = unstarted.get,
      elapsed = elapsed,
      latency = latencies.summary,
      stop = stop,
      retries = retriedN.sum,
      timeouts = timedOutN.sum,
      queueWait = queueWaits.map(_.summary),
      refused = refusedN.sum,
      dispositions = dispositions
    )
