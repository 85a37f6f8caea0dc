package weir

import fs2.Stream

import scala.concurrent.duration.FiniteDuration

/**
 * A pipeline that is running, from [[Pipeline.start]]. Every method may be called from any fiber, any
 * number of times.
 *
 * ==Ways a run ends==
 * Every way keeps the accounts exact: each received task ends once, as succeeded, failed or not started.
 *
 * | how                                        | returns                            | nothing starts after | in-flight tasks                          | lost |
 * |--------------------------------------------|------------------------------------|----------------------|------------------------------------------|------|
 * | the sources end ([[join]] waits for it)    | the [[Summary]], `Completed`       | (all ran)            | finish                                   | nothing |
 * | [[drain]]`(deadline)`                      | the [[Summary]], `Drained`         | the call             | finish within `deadline`, then `Interrupted` | the producers' unpulled elements |
 * | releasing the [[Pipeline.start]] resource (or cancelling `run`, or stopping the `outcomes` stream) | nothing; [[join]] has the summary, `Released` | the release | finish within the release grace, then `Interrupted` | the producers' unpulled elements |
 * | a failure under [[FailurePolicy.failFast]] | the [[Summary]] to [[join]], `FailedFast` | the failure   | interrupted at once (`Interrupted`)      | the producers' unpulled elements |
 *
 * "Unpulled elements" are those a producer's stream had not yet emitted: they were never received, so they
 * are in no count. Tasks that never started are in [[Summary.unstarted]] (and, on [[Pipeline.outcomes]],
 * emitted as [[TaskOutcome.NotStarted]]) on every row.
 */
trait Running[F[_], A]:

  /**
   * Waits for the run to end and returns its summary. Blocks until the sources are exhausted and every
   * task has finished, or until the run is stopped (drain, fail-fast, release). Cancelling `join` only
   * stops the wait, not the run.
   */
  def join: F[Summary[A]]

  /**
   * Stops taking tasks and returns the summary, with every task that never started in
   * [[Summary.unstarted]].
   *
   * What happens: producers stop (a pull in progress completes and its tasks are returned; one still
   * running at the deadline is cancelled); workers finish the task they are running, for up to
   * `deadline`, then the rest are interrupted and recorded as [[Disposition.Interrupted]]. Nothing
   * starts after `drain` is called. If the run already ended, returns its summary. Concurrent calls
   * all get the same summary; the first call's deadline applies.
   *
   * Errors: a negative deadline fails at once with `IllegalArgumentException`.
   * Cancellation: cancelling `drain` stops the wait; the drain goes on.
   */
  def drain(deadline: FiniteDuration): F[Summary[A]]

  /**
   * [[drain]]'s request without its wait, for a source that ends its own stream when it is drained (a
   * consumer that stops polling, a queue it closes): request the drain first, then end the stream. Once this
   * returns, the run ends drained, with [[StopReason.Drained]], however soon its sources end after it; a run
   * that had already ended, or whose stop was requested before (another drain, a fail-fast), keeps its own
   * end. Without the request, a stream that ends with every task done is a natural end, and the run would
   * end `Completed`.
   *
   * What blocks: nothing; the drain goes on as [[drain]] describes (nothing starts after the call, running
   * tasks get `deadline`), and [[join]] or [[drain]] waits for its summary.
   * Ordering: the first stop requested wins, as for [[drain]]: a later request (of a drain or anything else)
   * changes neither the end nor the deadline.
   * Cancellation: not cancelable; once it has begun, the request is made.
   * Errors: a negative deadline fails at once with `IllegalArgumentException`, and nothing is requested.
   * Concurrent callers: allowed, from any fiber.
   */
  def requestDrain(deadline: FiniteDuration): F[Unit]

  /**
   * Changes the concurrency limit. Raising it starts waiting tasks at once; lowering it never interrupts
   * a task — no task starts until fewer than `n` are in flight. Fails with `IllegalArgumentException`
   * when `n <= 0`.
   */
  def setLimit(n: Int): F[Unit]

  /** The counters now. Cheap: a few atomic reads. */
  def snapshot: F[Snapshot]

  /**
   * The latencies of the tasks that ran so far, as a histogram (the live form of [[Summary.latency]], for
   * metrics exporters). Tasks finishing while it is read may be missing from it; once the run has ended it
   * holds every task that ran. Costs a merge of a few histograms (one per thread that recorded), nothing
   * per task: read it every few seconds, not per task.
   */
  def latencies: F[DurationHistogram]

  /**
   * How long the tasks that started so far waited for their start, from entering the buffer to the start
   * of their first attempt, as a histogram; `None` unless the pipeline was built with
   * [[Pipeline.withQueueWaits]]. Read like [[latencies]]: live, cumulative, a few histograms merged.
   */
  def queueWaits: F[Option[DurationHistogram]]

  /**
   * A snapshot now, then one every `every`, and a last one when the run ends (then the stream ends).
   * Any number of these streams may run; each costs one timer per interval, nothing per task. An `every`
   * that is not positive fails the stream with `IllegalArgumentException` naming it (calling this throws
   * nothing).
   */
  def metrics(every: FiniteDuration): Stream[F, Snapshot]
