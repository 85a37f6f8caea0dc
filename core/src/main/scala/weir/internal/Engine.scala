package weir.internal

import cats.effect.kernel.{Async, Deferred, Poll, Ref, Resource}
import cats.Parallel
import cats.effect.instances.spawn.parallelForGenSpawn
import cats.effect.syntax.all.*
import cats.syntax.all.*
import fs2.{Chunk, Pull, Stream}
import weir.*

import java.util.concurrent.ThreadLocalRandom
import scala.concurrent.duration.*
import scala.util.control.NonFatal

/**
 * One run of a pipeline: producers feeding a [[TaskBuffer]], a [[WorkerPool]] draining it, a
 * [[Ledger]] keeping the accounts, and a conductor that ends the run — naturally, or on a drain, a
 * fail-fast or a release — and writes the [[Summary]].
 *
 * Every task goes received → (buffered) → started → succeeded | failed, or received → not started, and
 * each transition is recorded once, on every path: the handler's cancellation is recorded by the worker
 * that ran it, an interrupted offer hands its rest to the ledger, a cancelled take puts its element back,
 * and whatever the buffer still holds at the end is returned as not started.
 */
private[weir] final class Engine[F[_], A, B] private (
    settings: Settings[F, A, B],
    emit: Option[Engine.Emit[F, A, B]],
    startedAt: FiniteDuration,
    ledger: Ledger[F, A],
    buffer: TaskBuffer[F, A],
    window: Option[OrderWindow[F]],
    stopRequest: Deferred[F, Engine.StopRequest],
    result: Deferred[F, Summary[A]],
    sourceErrors: Ref[F, List[Throwable]],
    producersDone: Deferred[F, Unit],
    killProducers: F[Unit]
)(using F: Async[F])
    extends Running[F, A]:
  import Engine.*

  private given Parallel[F] = parallelForGenSpawn[F, Throwable]

  // set once, right after construction (the pool's workers run this engine's loop)
  @volatile private var pool: WorkerPool[F] = scala.compiletime.uninitialized

  def join: F[Summary[A]] = result.get

  def drain(deadline: FiniteDuration): F[Summary[A]] =
    F.raiseError(new IllegalArgumentException(s"drain deadline must be >= 0, was: $deadline"))
      .whenA(deadline < Duration.Zero) *> requestStop(StopReason.Drained, deadline) *> result.get

  def setLimit(n: Int): F[Unit] =
    F.raiseError(new IllegalArgumentException(s"concurrency limit must be > 0, was: $n")).whenA(n <= 0) *>
      pool.setLimit(n).flatMap { room =>
        if room > 0 then buffer.size.flatMap(b => pool.grow(math.min(b, room)))
        else if room < 0 then buffer.wake(-room)
        else F.unit
      }

  def snapshot: F[Snapshot] =
    (ledger.counts, buffer.size, pool.limit, pool.live, F.monotonic).mapN { (c, buffered, limit, live, now) =>
      Snapshot(
        now - startedAt,
        c.received,
        c.started,
        c.succeeded,
        c.failed,
        c.notStarted,
        c.inFlight,
        buffered.toLong,
        limit,
        live,
        c.retried,
        c.timedOut
      )
    }

  def metrics(every: FiniteDuration): Stream[F, Snapshot] =
    require(every > Duration.Zero, s"metrics interval must be > 0, was: $every")
    (Stream.eval(snapshot) ++ Stream.fixedDelay[F](every).evalMap(_ => snapshot))
      .interruptWhen(result.get.as(Right(()): Either[Throwable, Unit])) ++ Stream.eval(snapshot)

  // ---- producers ------------------------------------------------------------------------------

  private def produceAll: F[Unit] =
    settings.source.producers.parTraverse_(produce) *> buffer.close *> pool.finishing(stop = false) *>
      producersDone.complete(()).void

  /**
   * Feeds one producer's chunks to the buffer until it ends or is refused.
   *
   * One pull step per chunk, and usually nothing else: the fast offer (count the chunk received, append
   * it, hand elements to waiting workers) is a plain call made in the step's continuation, which runs
   * once, in this producer's fiber, when the chunk arrives, and cannot be interrupted half-way (it is
   * synchronous). An effect is evaluated only when one is needed: workers to start, or the slow offer
   * (the buffer is full or stopped). A `Pull.eval` per chunk would cost about as much again as the pull
   * itself for a source of one-element chunks (ADR 0012, addendum 2).
   */
  private def produce(stream: Stream[F, A]): F[Unit] =
    def go(s: Stream[F, A]): Pull[F, Nothing, Unit] =
      s.pull.uncons.flatMap {
        case Some((chunk, rest)) =>
          offerNow(chunk) match
            case TaskBuffer.Offered => go(rest)
            case next: F[Boolean] @unchecked =>
              Pull.eval(next).flatMap(accepted => if accepted then go(rest) else Pull.done)
        case None => Pull.done
      }
    go(stream).stream.compile.drain.handleErrorWith(e => sourceErrors.update(e :: _))

  /**
   * Offers one chunk now if it fits ([[TaskBuffer.Offered]]: nothing left to do), or returns the effect
   * that finishes the offer: starting workers, or waiting for room. That effect yields false once the
   * buffer refuses tasks (the run is stopping: the refused ones are recorded as not started, and the
   * producer reads no further). The chunk is counted received before it can be taken (so a snapshot never
   * shows a task started but not received), and counted again by the slow offer only if the fast one
   * failed, so that a producer cancelled before the slow offer runs leaves no task counted and unplaced.
   */
  private def offerNow(chunk: Chunk[A]): TaskBuffer.Offered.type | F[Boolean] =
    ledger.receivedNow(chunk.size)
    buffer.tryOfferNow(chunk, pool.growNow) match
      case TaskBuffer.Offered => TaskBuffer.Offered
      case null =>
        ledger.receivedNow(-chunk.size)
        slowOffer(chunk)
      case start: F[Unit] @unchecked => F.uncancelable(_ => start).as(true)

  private def slowOffer(chunk: Chunk[A]): F[Boolean] =
    F.uncancelable { poll =>
      ledger.received(chunk.size) *>
        buffer.offer(poll, chunk, pool.grow, rest => ledger.notStarted(rest.toList)).flatMap { refused =>
          if refused.isEmpty then F.pure(true) else ledger.notStarted(refused.toList).as(false)
        }
    }

  // ---- workers --------------------------------------------------------------------------------

  private def work(pool: WorkerPool[F]): F[Boolean] = F.uncancelable(poll => new Worker(pool, poll).life)

  /**
   * No rate limit, no retry, no timeout: a task is one attempt and, once taken (and, in input order,
   * admitted by the reorder window), starts at once, so it is counted started as it is taken. A task the
   * window does not admit yet takes the general path, which waits for its admission, as does a task whose
   * key function failed. Per key, the worker that ran a task goes on with the next task parked behind its
   * key, as the general path's `keyChain` does.
   */
  private val lean =
    settings.retry.maxAttempts == 1 && settings.taskTimeout.isEmpty && settings.rateLimit.isEmpty

  private val orderWindow: OrderWindow[F] | Null = window.orNull

  /**
   * Whether `entry` can run on the lean path now: admitted by the reorder window (a plain read), if any, and
   * with a key (if any) that did not fail.
   */
  private def leanNow(entry: TaskBuffer.Entry[A]): Boolean =
    lean && !entry.key.isInstanceOf[TaskBuffer.KeyFailure] &&
      (orderWindow == null || orderWindow.nn.admittedNow(entry.seq))

  /**
   * One worker: takes a task, runs it, again, until the buffer is finished (`life` ends with false) or
   * the pool has too many workers (true: it retired).
   *
   * Its whole life is masked: it can be cancelled only where it waits (a take, a reorder-window admission,
   * a rate-limiter permit, a backoff) or runs a handler, all inside `poll`, and each of those places
   * records what a cancellation leaves behind. On the lean path that record is one finalizer for the
   * worker's life, which reads `current`, instead of one finalizer per task.
   *
   * The lean path is the hot path, so it is written for the run loop: its continuations are built once
   * per worker, and the take, the retire check, the counters and the latency record are plain calls fused
   * into one step (an `F.delay`, or the continuation of the clock reading that ends a task); besides what
   * its handler builds, a task allocates three effect nodes (its `poll`, `attempt` and `flatMap`). The mutable fields are confined to this worker's fiber: they are
   * written and read only by its own continuations and delays, which run one after another.
   */
  private final class Worker(pool: WorkerPool[F], poll: Poll[F]):
    private var current: TaskBuffer.Entry[A] | Null = null // the lean task running now
    private var t0 = 0L // when it started (monotonic nanoseconds)
    private var result: Either[Throwable, B] = Left(null) // how it ended, between `ended` and `recorded`

    /** The fast take, as one plain step; `null`: retire or take the slow way. */
    private def next(): TaskBuffer.Entry[A] | Null =
      if pool.overLimitNow then null
      else
        val entry = buffer.tryTakeNow()
        if entry != null && leanNow(entry) then claim(entry)
        entry

    /**
     * A lean task starts as it is taken: counted started and held in `current` for the finalizer. (A task
     * taken but not claimed, because the window does not admit it yet, runs on the general path.)
     */
    private def claim(entry: TaskBuffer.Entry[A]): Unit =
      ledger.startedNow()
      current = entry

    private val dispatch: (TaskBuffer.Entry[A] | Null) => F[Boolean] = entry =>
      if entry == null then slowTake
      else if current != null then F.monotonic.flatMap(started) // claimed by `next`
      else run(poll, entry).flatMap(_ => loop)

    private val started: FiniteDuration => F[Boolean] = at =>
      t0 = at.toNanos
      attempt(current.nn)

    /** Runs the lean task `entry` (already counted started, `t0` set), then [[ended]]. */
    private def attempt(entry: TaskBuffer.Entry[A]): F[Boolean] =
      poll(handle(entry.task)).attempt.flatMap(ended)

    private val ended: Either[Throwable, B] => F[Boolean] = r =>
      result = r
      clockThenRecorded

    /*
     * After a lean task: one clock reading serves as its end and, when the next task can be taken at once,
     * as that task's start. The success is counted and the next task taken right here in the continuation,
     * not in a further `F.delay`: the continuation runs once, in this worker's fiber, when the clock reading
     * arrives, which is all a delay would guarantee, for one allocation and one run-loop step less per task.
     */
    private val recorded: FiniteDuration => F[Boolean] = at =>
      val entry = current.nn
      val now = at.toNanos
      val latency = now - t0
      current = null
      result match
        case Right(_) if emit.isEmpty =>
          ledger.succeededNow(latency)
          carryOn(entry, now)
        case Right(value) => succeeded(entry, value, latency.nanos, 1).flatMap(_ => after(entry))
        case Left(error) => failed(entry, error, latency.nanos, 1).flatMap(_ => after(entry))

    /**
     * After a lean success with nothing to publish, as plain steps: mark the reorder window, hand the key on
     * to the task parked behind it, take the next task. Only a step that must wake someone (admissions the
     * window lets in, a producer waiting for the place a handed-on task frees) goes the effectful way.
     */
    private def carryOn(entry: TaskBuffer.Entry[A], now: Long): F[Boolean] =
      val woken = if orderWindow == null then null else orderWindow.nn.finishedNow(entry.seq)
      woken match
        case wake: F[Unit] @unchecked => wake.flatMap(_ => loop)
        case null =>
          entry.key match
            case null => proceed(next(), now)
            case key =>
              buffer.finishKeyNow(key) match
                case Some(following) => // the key's next task, already claimed for this worker
                  claim(following)
                  proceed(following, now)
                case None => proceed(next(), now)
                case null => afterKey(key)

    /** Goes on with `following` (taken, `null` if none) from the clock reading `now`. */
    private def proceed(following: TaskBuffer.Entry[A] | Null, now: Long): F[Boolean] =
      if following == null then slowTake
      else if current != null then // claimed: a lean task
        t0 = now
        attempt(following)
      else run(poll, following).flatMap(_ => loop)

    /** After a lean task that took a slower way to its end: the key's next task, or any. */
    private def after(entry: TaskBuffer.Entry[A]): F[Boolean] =
      entry.key match
        case null => loop
        case key => afterKey(key)

    /** The key's next task (claimed for this worker), or any task once the key is released (see `finishKey`). */
    private def afterKey(key: Any): F[Boolean] =
      buffer.finishKey(key).flatMap {
        case Some(following) =>
          F.monotonic.flatMap { at =>
            claim(following)
            started(at)
          }
        case None => loop
      }

    // built once per worker, after the continuations they use
    private val clockThenRecorded: F[Boolean] = F.monotonic.flatMap(recorded)
    private val loop: F[Boolean] = F.delay(next()).flatMap(dispatch)

    def life: F[Boolean] = loop.onCancel(F.defer(interrupted))

    /** Retires if the pool is over its limit; otherwise takes a task, waiting for one if need be. */
    private def slowTake: F[Boolean] =
      pool.tryRetire.flatMap { retired =>
        if retired then F.pure(true)
        else
          buffer.take(poll).flatMap {
            case Some(entry) =>
              if leanNow(entry) then
                F.monotonic.flatMap { at =>
                  claim(entry) // in the continuation, like `recorded`'s bookkeeping
                  started(at)
                }
              else run(poll, entry).flatMap(_ => loop)
            case None => buffer.isFinished.flatMap(done => if done then F.pure(false) else loop)
          }
      }

    /** What a cancelled worker leaves: the lean task it was running, if any, is recorded interrupted. */
    private def interrupted: F[Unit] =
      current match
        case null => F.unit
        case entry: TaskBuffer.Entry[A] @unchecked =>
          current = null
          F.monotonic.flatMap(at => Engine.this.interrupted(entry, (at.toNanos - t0).nanos, 1))

  private def run(poll: Poll[F], entry: TaskBuffer.Entry[A]): F[Unit] =
    val task = entry.task
    window match
      case Some(w) =>
        // a task admitted after the run began to stop must not start: it goes back as not started
        w.admit(poll, entry.seq).onCancel(ledger.notStarted(List(task))) *>
          buffer.isStopped.ifM(unstarted(entry), start(poll, entry))
      case None =>
        entry.key match
          case null => start(poll, entry)
          case failure: TaskBuffer.KeyFailure => // the key function is part of handling the task
            ledger.started *> failed(entry, failure.error, Duration.Zero, 1)
          case key => keyChain(poll, key, entry)

  /** Runs `entry`, whose key it claimed, then the tasks parked behind that key, one by one. */
  private def keyChain(poll: Poll[F], key: Any, entry: TaskBuffer.Entry[A]): F[Unit] =
    // once the run stops, tasks parked behind the key stay in the buffer and are returned as not started
    start(poll, entry) *> buffer.finishKey(key).flatMap(_.fold(F.unit)(keyChain(poll, key, _)))

  /**
   * The handler's effect for `task`; a handler that throws instead of returning a failed effect fails
   * that task like any other error (it would otherwise escape the worker and lose the task).
   */
  private def handle(task: A): F[B] =
    try settings.handler(task)
    catch case NonFatal(e) => F.raiseError(e)

  private val retry = settings.retry
  // no retry and no timeout: each task is one plain attempt, the leanest path
  private val plain = retry.maxAttempts == 1 && settings.taskTimeout.isEmpty

  /** Starts `entry`, once the rate limiter (if any) grants its permit; a stop while it waits wins. */
  private def start(poll: Poll[F], entry: TaskBuffer.Entry[A]): F[Unit] =
    settings.rateLimit match
      case None => begin(poll, entry)
      case Some(limiter) =>
        poll(F.race(limiter.acquire, stopRequest.get))
          .onCancel(ledger.notStarted(List(entry.task)))
          .flatMap(granted => if granted.isLeft then begin(poll, entry) else unstarted(entry))

  /** A task taken from the buffer that will not start (the run is stopping): returned as not started. */
  private def unstarted(entry: TaskBuffer.Entry[A]): F[Unit] =
    ledger.notStarted(List(entry.task)) *> finished(entry) // frees its place in the reorder window

  private def begin(poll: Poll[F], entry: TaskBuffer.Entry[A]): F[Unit] =
    ledger.started *> F.monotonic.flatMap { t0 =>
      if plain then
        poll(handle(entry.task))
          .onCancel(F.monotonic.flatMap(t1 => interrupted(entry, t1 - t0, 1)))
          .redeemWith(
            error => F.monotonic.flatMap(t1 => failed(entry, error, t1 - t0, 1)),
            value => F.monotonic.flatMap(t1 => succeeded(entry, value, t1 - t0, 1))
          )
      else attempt(poll, entry, t0, 1)
    }

  /** Attempt number `n` of a task started at `t0`; a retry's backoff is waited out in the same slot. */
  private def attempt(poll: Poll[F], entry: TaskBuffer.Entry[A], t0: FiniteDuration, n: Int): F[Unit] =
    val onCancel = F.monotonic.flatMap(t1 => interrupted(entry, t1 - t0, n))
    poll(timed(handle(entry.task)))
      .onCancel(onCancel)
      .redeemWith(
        error =>
          ledger.timedOut.whenA(error.isInstanceOf[TaskTimedOut]) *> {
            if n < retry.maxAttempts && retry.retryable(error) then
              backoff(n).flatMap(d => poll(F.sleep(d) *> permit).onCancel(onCancel)) *> ledger.retried *>
                attempt(poll, entry, t0, n + 1)
            else F.monotonic.flatMap(t1 => failed(entry, error, t1 - t0, n))
          },
        value => F.monotonic.flatMap(t1 => succeeded(entry, value, t1 - t0, n))
      )

  /** A retry's permit (the first attempt's was granted in [[start]]). */
  private val permit: F[Unit] = settings.rateLimit.fold(F.unit)(_.acquire)

  private def timed(attempt: F[B]): F[B] =
    settings.taskTimeout match
      case Some(limit) => F.timeoutTo(attempt, limit, F.raiseError(new TaskTimedOut(limit)))
      case None => attempt

  private def backoff(failed: Int): F[FiniteDuration] =
    F.delay(retry.backoff(failed, ThreadLocalRandom.current()))

  private val tracked = window.isDefined || emit.isDefined

  private def succeeded(
      entry: TaskBuffer.Entry[A],
      value: B,
      latency: FiniteDuration,
      attempts: Int
  ): F[Unit] =
    if tracked then
      ledger.succeeded(latency) *> finished(entry) *>
        publish(entry.seq, Outcome.Succeeded(entry.task, value, attempts))
    else ledger.succeeded(latency) // nothing else to tell: no window, no outcome stream

  private def failed(
      entry: TaskBuffer.Entry[A],
      error: Throwable,
      latency: FiniteDuration,
      attempts: Int
  ): F[Unit] =
    def record(disposition: Disposition): F[Unit] =
      val outcome = new Outcome.Failed(entry.task, error, disposition, attempts)
      ledger.failed(outcome, Some(latency)) *> finished(entry) *> publish(entry.seq, outcome)
    settings.policy match
      case FailurePolicy.FailFast() =>
        // the first failure stops the run; one that lands while it is stopping is only recorded
        requestStop(StopReason.FailedFast(error), Duration.Zero)
          .flatMap(first => record(if first then Disposition.Aborted else Disposition.Skipped))
      case FailurePolicy.Skip() => record(Disposition.Skipped)
      case FailurePolicy.DeadLetter(sink) =>
        // the sink runs uncancelably in this slot: a task handed to it is recorded as dead-lettered or not
        sink(entry.task, error).attempt.flatMap {
          case Right(_) => record(Disposition.DeadLettered)
          case Left(sinkError) => F.delay(error.addSuppressed(sinkError)) *>
              record(Disposition.DeadLetterFailed)
        }

  private def interrupted(entry: TaskBuffer.Entry[A], latency: FiniteDuration, attempts: Int): F[Unit] =
    stopRequest.tryGet.flatMap { request =>
      val why = request.fold("the run was cancelled")(r => s"the run stopped (${r.reason})")
      val outcome =
        new Outcome.Failed(entry.task, new TaskInterrupted(why), Disposition.Interrupted, attempts)
      ledger.failed(outcome, Some(latency)) *> finished(entry) *> publish(entry.seq, outcome)
    }

  /**
   * Hands an outcome to the consumer, if there is one (the outcome is not even built otherwise). Not
   * cancelable: an outcome recorded in the ledger always reaches the stream too, so a consumer that stops
   * reading can hold up a drain's deadline (releasing the stream closes the channel and frees it).
   */
  private def publish(position: Long, outcome: => Outcome[A, B]): F[Unit] =
    emit match
      case Some(out) => out(position, outcome)
      case None => F.unit

  private def finished(entry: TaskBuffer.Entry[A]): F[Unit] =
    window.fold(F.unit)(_.finished(entry.seq))

  // ---- the end of the run -----------------------------------------------------------------------

  /** Nothing starts from now on; the conductor does the rest. True for the request that won. */
  private def requestStop(reason: StopReason, deadline: FiniteDuration): F[Boolean] =
    buffer.stop *> stopRequest.complete(StopRequest(reason, deadline))

  private def conduct: F[Unit] =
    F.race(pool.awaitExit, stopRequest.get).flatMap {
      case Left(_) => finish
      case Right(request) => shutdown(request.deadline) *> finish
    }

  /** Stops taking tasks, lets in-flight ones finish within `deadline`, then interrupts what is left. */
  private def shutdown(deadline: FiniteDuration): F[Unit] =
    buffer.stop *> pool.finishing(stop = true) *>
      (
        F.timeoutTo(pool.awaitExit, deadline, pool.kill),
        F.timeoutTo(producersDone.get, deadline, killProducers)
      ).parTupled.void

  private def finish: F[Unit] =
    for
      left <- buffer.remaining
      _ <- ledger.notStarted(left)
      request <- stopRequest.tryGet
      errors <- sourceErrors.get
      stop = stopReason(request.map(_.reason), errors)
      counts <- ledger.counts
      failures <- ledger.failedTasks
      unstarted <- ledger.unstartedTasks
      latency <- ledger.latency
      now <- F.monotonic
      reason = notStartedReason(stop)
      _ <- unstarted.traverse_(task => publish(Long.MaxValue, Outcome.NotStarted(task, reason)))
      summary = Summary(
        counts.received,
        counts.succeeded,
        counts.failed,
        counts.notStarted,
        failures,
        unstarted,
        now - startedAt,
        latency,
        stop,
        counts.retried,
        counts.timedOut
      )
      _ <- result.complete(summary)
    yield ()

private[weir] object Engine:

  /** Where outcomes go, with their input position (`Long.MaxValue` when the task never got one). */
  type Emit[F[_], A, B] = (Long, Outcome[A, B]) => F[Unit]

  final case class StopRequest(reason: StopReason, deadline: FiniteDuration)

  private def stopReason(requested: Option[StopReason], sourceErrors: List[Throwable]): StopReason =
    val sourceFailed = sourceErrors.reverse match
      case Nil => None
      case first :: more =>
        more.foreach(first.addSuppressed)
        Some(StopReason.SourceFailed(first))
    requested match
      case Some(f: StopReason.FailedFast) => f
      case other => sourceFailed.orElse(other).getOrElse(StopReason.Completed)

  private def notStartedReason(stop: StopReason): NotStartedReason = stop match
    case StopReason.FailedFast(_) => NotStartedReason.FailedFast
    case StopReason.Drained => NotStartedReason.Drained
    case _ => NotStartedReason.Cancelled

  /** Starts a run; releasing it stops the run (see [[Pipeline.start]]) and leaks no fiber. */
  def start[F[_], A, B](settings: Settings[F, A, B], emit: Option[Emit[F, A, B]])(using
      F: Async[F]
  ): Resource[F, Running[F, A]] =
    for
      workers <- FiberGroup.resource[F]
      producers <- FiberGroup.resource[F]
      keyOf = settings.ordering match
        case Ordering.ByKey(f) => Some((a: A) => f(a): Any)
        case _ => None
      engine <- Resource.eval(
        for
          startedAt <- F.monotonic
          ledger <- Ledger[F, A]
          buffer <- TaskBuffer[F, A](settings.bufferCapacity, keyOf)
          window <- settings.ordering match
            case Ordering.InputOrder(w) =>
              OrderWindow[F](w.getOrElse(Defaults.reorderWindow(settings.limit.initial))).map(Some(_))
            case _ => F.pure(None)
          stopRequest <- F.deferred[StopRequest]
          result <- F.deferred[Summary[A]]
          sourceErrors <- F.ref(List.empty[Throwable])
          producersDone <- F.deferred[Unit]
          engine = new Engine(
            settings,
            emit,
            startedAt,
            ledger,
            buffer,
            window,
            stopRequest,
            result,
            sourceErrors,
            producersDone,
            producers.close
          )
          pool <- WorkerPool[F](settings.limit.initial, workers)(engine.work)
          _ <- F.delay(engine.pool = pool)
        yield engine
      )
      _ <- F.background(engine.conduct)
      _ <- Resource.eval(producers.start(engine.produceAll))
      running <- Resource.make(F.pure(engine))(e =>
        e.requestStop(StopReason.Cancelled, settings.releaseGrace) *> e.join.void
      )
    yield running
