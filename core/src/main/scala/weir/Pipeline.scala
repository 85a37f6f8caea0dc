package weir

import cats.effect.kernel.{Async, Resource}
import fs2.{Pipe, Stream}

import weir.internal.{AdaptiveController, Engine, Outcomes, Settings}

import scala.concurrent.duration.*

/**
 * A task-processing pipeline: a [[Source]] of tasks, a handler, and the policies that govern how they
 * meet. Immutable; every `with…` returns a new pipeline, and each `run`, `outcomes` or `start` is an
 * independent run.
 *
 * {{{
 * Pipeline(Source.partitioned(2)(p => tasksOf(p)))
 *   .process(fetch)
 *   .withLimit(Limit.fixed(100))
 *   .withBuffer(200)
 *   .withFailurePolicy(FailurePolicy.skip)
 *   .run
 * }}}
 *
 * Settings are checked when a run starts, never when they are set: a `with…` with a bad value (and a bad
 * [[Limit]], [[Retry]], [[TaskOrder]] or [[Source]]) throws nothing, and [[start]], [[run]], [[outcomes]]
 * and [[Pipeline.pipe]] fail in `F`, before any task is taken, with one [[InvalidSettings]] naming every bad
 * value ([[errors]]).
 */
final class Pipeline[F[_], A, B] private (settings: Settings[F, A, B])(using F: Async[F]):

  /** Replaces the concurrency limit (default [[Limit.fixed]]`(`[[Defaults.concurrency]]`)`). */
  def withLimit(limit: Limit): Pipeline[F, A, B] = copy(settings.copy(limit = limit))

  /**
   * Sets the capacity of the buffer between producers and workers, in tasks (default
   * [[Defaults.bufferCapacity]]). Producers wait while it is full. A `capacity` below 1 fails the run's
   * start with [[InvalidSettings]].
   */
  def withBuffer(capacity: Int): Pipeline[F, A, B] = copy(settings.copy(bufferCapacity = capacity))

  /** Sets the order in which tasks run and their outcomes are emitted (default [[TaskOrder.unordered]]). */
  def withOrder(order: TaskOrder[A]): Pipeline[F, A, B] = copy(settings.copy(order = order))

  /** Sets what happens when a handler fails (default [[FailurePolicy.skip]]). */
  def withFailurePolicy(policy: FailurePolicy[F, A]): Pipeline[F, A, B] = copy(settings.copy(policy = policy))

  /**
   * The failure policy set (default [[FailurePolicy.skip]]), for code that wraps a pipeline and whose
   * acknowledgements depend on it: a source that acknowledges a skipped failure only under the skip policy
   * reads its [[FailurePolicy.kind]].
   */
  def failurePolicy: FailurePolicy[F, A] = settings.policy

  /**
   * Retries failed attempts (default [[Retry.none]]). A waiting retry holds its slot; see [[Retry]].
   */
  def withRetry(retry: Retry): Pipeline[F, A, B] = copy(settings.copy(retry = retry))

  /**
   * Starts no attempt without a permit from `limiter` (a token bucket, see [[RateLimiter]]): tasks start
   * at most at the limiter's rate, after an initial burst, whatever the concurrency limit. Share one
   * limiter between pipelines to share its rate between them.
   *
   * Where tasks wait: a worker takes a task from the buffer, then waits for its permit. Until it has the
   * permit the task is not started (not in flight, no latency counted), and a drain or a release returns
   * it at once as not started. Each retry asks for a new permit (a retry calls the upstream again); it
   * waits for it in its slot, as it waits out its backoff. Waiting workers arm no timer of their own: the
   * limiter keeps one timer however many wait.
   */
  def withRateLimit(limiter: RateLimiter[F]): Pipeline[F, A, B] =
    copy(settings.copy(rateLimit = Some(limiter)))

  /**
   * Fails any attempt that runs longer than `timeout` with [[TaskTimedOut]]: the attempt is cancelled at
   * its deadline, `timeout` after its own start, and its finalizers run before it fails; a timed-out
   * attempt is retried like any other failure, in the same slot. A task told to stop ([[Interruptible]])
   * before its attempt's deadline is recorded interrupted, not timed out. A `timeout <= 0` fails the run's
   * start with [[InvalidSettings]].
   *
   * Each worker keeps the deadline of its attempts with one timer, not one per attempt: a timeout costs
   * little per task however short the tasks.
   */
  def withTaskTimeout(timeout: FiniteDuration): Pipeline[F, A, B] =
    copy(settings.copy(taskTimeout = Some(timeout)))

  /**
   * How long in-flight tasks may go on when a started run is released (or `run` is cancelled) before they
   * are interrupted (default zero: at once). A negative grace fails the run's start with [[InvalidSettings]].
   */
  def withReleaseGrace(grace: FiniteDuration): Pipeline[F, A, B] = copy(settings.copy(releaseGrace = grace))

  /**
   * Measures how long each task waits for its start: from entering the buffer to the start of its first
   * attempt (so a wait for the reorder window, a key or a rate-limit permit counts, a retry's backoff does
   * not). The waits go to [[Running.queueWaits]] and [[Summary.queueWait]]. Off by default: on, each chunk
   * a producer offers costs a clock reading, and each task an entry a few bytes larger.
   */
  def withQueueWaits: Pipeline[F, A, B] = copy(settings.copy(queueWaits = true))

  /**
   * Keeps the last `n` failed tasks in [[Summary.failures]] (default [[Defaults.failureSample]]); every
   * failure is still counted, in [[Summary.failed]] and [[Summary.dispositions]]. The summary's memory is
   * bounded by `n` however long the run; the full record of failures is [[outcomes]] (or the dead-letter
   * sink). `0` keeps none; a negative `n` is refused when a run starts ([[errors]]).
   */
  def withFailureSample(n: Int): Pipeline[F, A, B] = copy(settings.copy(failureSample = n))

  /**
   * Runs every task and returns the summary. Outcomes are counted, not kept, except for the unstarted tasks
   * and a bounded sample of the failed ones ([[withFailureSample]]), so memory does not grow with the
   * number of tasks.
   *
   * Cancellation: cancelling `run` stops the run as a release of [[start]] does; no fiber is left behind.
   */
  def run: F[Summary[A]] = start.use(_.join)

  /**
   * Runs the pipeline, emitting one [[TaskOutcome]] per task: successes and failures as they happen (in input
   * order under [[TaskOrder.inputOrder]]), then the tasks that never started. A slow consumer of this stream
   * slows the workers down once [[Defaults.outcomeBuffer]] outcomes wait. Stopping the stream early (for
   * example with `take`) stops the run as a release of [[start]] does.
   */
  def outcomes: Stream[F, TaskOutcome[A, B]] = Stream.resource(startWithOutcomes).flatMap(_._2)

  /**
   * [[start]] and [[outcomes]] together: the handle, to drain or tune the run, and its outcomes, to be
   * consumed by exactly one reader. Until someone reads them, at most [[Defaults.outcomeBuffer]] outcomes
   * wait and then the workers do (so a reader that stops reading also holds up a drain's deadline); the
   * stream ends once the run has ended and every outcome (including the tasks a drain returned) was
   * emitted.
   */
  def startWithOutcomes: Resource[F, (Running[F, A], Stream[F, TaskOutcome[A, B]])] =
    for
      channel <- Resource.eval(F.delay(Outcomes.unsafe[F, A, B](settings.order, Defaults.outcomeBuffer)))
      running <- engine(Some(channel))
      // released before the run stops: a stopping run then emits into a closed channel instead of waiting
      _ <- Resource.onFinalize(channel.close)
      _ <- F.background(F.flatMap(running.join)(_ => channel.close))
    yield (running, channel.stream)

  /**
   * Starts the pipeline and hands back a [[Running]] handle: drain it, change its limit, watch its
   * metrics. Releasing the resource stops the run if it is still going: nothing new starts, in-flight
   * tasks get the release grace and are then interrupted; the accounts stay exact (see [[Running.join]]),
   * and no fiber is left behind.
   */
  def start: Resource[F, Running[F, A]] = engine(None)

  /**
   * What is wrong with this pipeline's settings (its source, limit, buffer, order, retry, task timeout and
   * release grace), each bad value named; empty when they are valid. A run of a pipeline with any fails to
   * start with an [[InvalidSettings]] listing them all.
   */
  def errors: List[String] = settings.errors

  /**
   * The engine, with an adaptive limit's controller around it when the limit is adaptive; the settings are
   * checked first, once per run.
   */
  private def engine(emit: Option[Outcomes[F, A, B]]): Resource[F, Running[F, A]] =
    Validation.resource("Pipeline", settings.errors).flatMap(_ =>
      AdaptiveController.around(settings)(Engine.start(_, emit))
    )

  override def toString: String =
    s"Pipeline(${settings.source}, ${settings.limit}, buffer=${settings.bufferCapacity}, ${settings.order})"

  private def copy[B2](s: Settings[F, A, B2]): Pipeline[F, A, B2] = new Pipeline(s)

object Pipeline:

  /** Starts building a pipeline over `source`. */
  def apply[F[_]: Async, A](source: Source[F, A]): Builder[F, A] = new Builder(source)

  /** Starts building a pipeline over a single producer. */
  def apply[F[_]: Async, A](stream: Stream[F, A]): Builder[F, A] = new Builder(Source(stream))

  /**
   * The pipe form, for a stream that is already there: `tasks.through(Pipeline.pipe(handler))` is
   * `Pipeline(tasks).process(handler).outcomes`, one [[TaskOutcome]] per task, with the default settings.
   * Each stream the pipe is applied to is an independent run; stopping the output early stops that run as
   * a release of [[Pipeline.start]] does.
   */
  def pipe[F[_]: Async, A, B](handler: A => F[B]): Pipe[F, A, TaskOutcome[A, B]] =
    pipe(handler, identity)

  /**
   * The pipe form with settings: `configure` receives the pipeline of the stream the pipe is applied to,
   * with the default settings, and sets what it needs, as on the builder:
   * `tasks.through(Pipeline.pipe(handler, _.withLimit(Limit.fixed(8)).withOrder(TaskOrder.inputOrder)))`.
   */
  def pipe[F[_]: Async, A, B](
      handler: A => F[B],
      configure: Pipeline[F, A, B] => Pipeline[F, A, B]
  ): Pipe[F, A, TaskOutcome[A, B]] =
    tasks => configure(Pipeline(tasks).process(handler)).outcomes

  /** A pipeline that has a source and needs a handler. */
  final class Builder[F[_], A] private[Pipeline] (source: Source[F, A])(using F: Async[F]):

    /** Each task is handled by `handler`, an effect that should not block its thread. */
    def process[B](handler: A => F[B]): Pipeline[F, A, B] = build(handler)

    /**
     * Each task is handled by `handler`, which may block its thread (JDBC, file I/O, a blocking client). It
     * runs on Cats Effect's blocking pool, never on the compute pool, and is interruptible: cancelling it
     * (fail-fast, a drain deadline) interrupts the thread. See `docs/adr/0002-blocking-handlers.md`.
     */
    def processBlocking[B](handler: A => B): Pipeline[F, A, B] = build(a => F.interruptible(handler(a)))

    private def build[B](handler: A => F[B]): Pipeline[F, A, B] =
      new Pipeline(
        Settings(
          source = source,
          handler = handler,
          limit = Limit.fixed(Defaults.concurrency),
          bufferCapacity = Defaults.bufferCapacity,
          order = TaskOrder.unordered,
          policy = FailurePolicy.skip[F],
          releaseGrace = Defaults.releaseGrace,
          retry = Retry.none,
          taskTimeout = None,
          rateLimit = None,
          queueWaits = false,
          failureSample = Defaults.failureSample
        )
      )
