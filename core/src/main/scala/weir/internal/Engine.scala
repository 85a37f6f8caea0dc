package weir.internal

import cats.effect.kernel.{Async, Deferred, Fiber, Ref, Resource}
import cats.Parallel
import cats.effect.instances.spawn.parallelForGenSpawn
import cats.syntax.all.*
import fs2.Stream
import weir.*

import scala.concurrent.duration.*

/**
 * One run of a pipeline, wired once from its settings:
 *
 * {{{
 * source ─▶ Producer ─▶ TaskBuffer ─▶ Worker × limit ─▶ TaskPath: admit → permit → attempt → record
 *                                         (WorkerPool)                                       (Recorder, Ledger)
 * }}}
 *
 * and an end, made once by whichever comes first: the pool's exit (the sources ended and every task ran)
 * writes the [[Summary]] in the step that made it; a stop request (a drain, a fail-fast, a release) starts a
 * conductor, which shuts the run down within the request's deadline and then writes it.
 *
 * Every task goes received → (buffered) → started → succeeded | failed, or received → not started, and
 * each transition is recorded once, on every path: the handler's cancellation is recorded by the worker
 * that ran it, an interrupted offer hands its rest to the ledger, a cancelled take puts its element back,
 * and whatever the buffer still holds at the end is returned as not started.
 */
private[weir] final class Engine[F[_], A, B] private (
    startedAt: FiniteDuration,
    ledger: Ledger[A],
    buffer: TaskBuffer[F, A],
    pool: WorkerPool[F],
    record: Recorder[F, A, B],
    private val stop: Stop[F],
    ending: Deferred[F, Boolean],
    conductor: Deferred[F, Fiber[F, Throwable, Unit]],
    result: Deferred[F, Summary[A]],
    sourceErrors: Ref[F, List[Throwable]],
    producersDone: Deferred[F, Unit],
    workers: FiberGroup[F],
    producers: FiberGroup[F],
    private val produce: F[Unit]
)(using F: Async[F])
    extends Running[F, A]:

  private given Parallel[F] = parallelForGenSpawn[F, Throwable]

  def join: F[Summary[A]] = result.get

  def drain(deadline: FiniteDuration): F[Summary[A]] =
    F.raiseError(new IllegalArgumentException(s"drain deadline must be >= 0, was: $deadline"))
      .whenA(deadline < Duration.Zero) *> stop.request(StopReason.Drained, deadline) *> result.get

  def setLimit(n: Int): F[Unit] =
    F.raiseError(new IllegalArgumentException(s"concurrency limit must be > 0, was: $n")).whenA(n <= 0) *>
      pool.setLimit(n).flatMap { room =>
        if room > 0 then buffer.size.flatMap(b => pool.grow(math.min(b, room)).getOrElse(F.unit))
        else if room < 0 then buffer.wake(-room)
        else F.unit
      }

  def snapshot: F[Snapshot] =
    (buffer.size, pool.limit, pool.live, F.monotonic).tupled.flatMap { (buffered, limit, live, now) =>
      F.delay(ledger.snapshot(elapsed = now - startedAt, buffered = buffered, limit = limit, workers = live))
    }

  def latencies: F[DurationHistogram] = F.delay(ledger.latencyHistogram)

  def queueWaits: F[Option[DurationHistogram]] = F.delay(ledger.queueWaitHistogram)

  def metrics(every: FiniteDuration): Stream[F, Snapshot] =
    require(every > Duration.Zero, s"metrics interval must be > 0, was: $every")
    (Stream.eval(snapshot) ++ Stream.fixedDelay[F](every).evalMap(_ => snapshot))
      .interruptWhen(result.get.as(Right(()): Either[Throwable, Unit])) ++ Stream.eval(snapshot)

  // ---- the end of the run -----------------------------------------------------------------------

  /**
   * The release of the run: asks it to stop unless it has ended, waits for its summary, then cancels
   * whatever is left: the conductor if a request started one (its last step wrote the summary), the
   * producers, the workers. A request after the end would change nothing, so a run that ended on its own
   * makes none.
   */
  private def release(grace: FiniteDuration): F[Unit] =
    val ended = result.tryGet.flatMap {
      case Some(_) => F.unit
      case None => stop.request(StopReason.Released, grace) *> result.get.void
    }
    // a request that won `ending` completes `conductor` in the same uncancelable step: the wait is short
    val conducted =
      ending.get.flatMap(byRequest => if byRequest then conductor.get.flatMap(_.cancel) else F.unit)
    ended *> conducted *> producers.close *> workers.close

  /*
   * `ending` is completed once, by the first of the pool's exit (false) and a stop request (true), and that
   * side ends the run. An exit that comes first is a natural end: every producer has finished and every worker
   * left, so there is nothing to shut down, and the step that made the exit, not cancelable, writes the summary.
   * A request that comes first starts the conductor. A run that ends on its own thus starts no fiber for its end
   * and wakes none; the other side, coming later, finds `ending` complete and does nothing.
   */
  private def exited: F[Unit] = ending.complete(false).flatMap(first => finish.whenA(first))

  private def requested: F[Unit] =
    ending.complete(true).flatMap { first =>
      if first then F.start(conduct).flatMap(conductor.complete).void else F.unit
    }

  private def conduct: F[Unit] = stop.requested.get.flatMap(request => shutdown(request.deadline)) *> finish

  /** Stops taking tasks, lets in-flight ones finish within `deadline`, then interrupts what is left. */
  private def shutdown(deadline: FiniteDuration): F[Unit] =
    buffer.stop *> pool.finishing(stop = true) *>
      (
        F.timeoutTo(pool.awaitExit, deadline, pool.kill),
        F.timeoutTo(producersDone.get, deadline, producers.close)
      ).parTupled.void

  private def finish: F[Unit] =
    for
      left <- buffer.remaining
      _ <- F.delay(ledger.notStarted(left))
      request <- stop.requested.tryGet
      errors <- sourceErrors.get
      reason = Stop.reason(request.map(_.reason), errors)
      summary <- F.monotonic.flatMap(now => F.delay(ledger.summary(elapsed = now - startedAt, stop = reason)))
      why = Stop.notStartedReason(reason)
      _ <-
        summary.unstarted.traverse_(task => record.publish(Long.MaxValue, TaskOutcome.NotStarted(task, why)))
      _ <- result.complete(summary)
    yield ()

private[weir] object Engine:

  /** Where outcomes go, with their input position (`Long.MaxValue` when the task never got one). */
  type Emit[F[_], A, B] = (Long, TaskOutcome[A, B]) => F[Unit]

  /**
   * Starts a run; releasing it stops the run (see [[Pipeline.start]]) and leaks no fiber.
   *
   * One acquire and one release rather than a resource per part: a run's set-up and end run once per run,
   * so the JVM runs them at its slowest tier for a long time, and every step of a composed resource is
   * more of that code.
   */
  def start[F[_], A, B](settings: Settings[F, A, B], emit: Option[Emit[F, A, B]])(using
      F: Async[F]
  ): Resource[F, Running[F, A]] =
    Resource.make(launch(settings, emit))(_.release(settings.releaseGrace))

  /** Wires a run and starts its producers. Run by `Resource.make`: not cancelable. */
  private def launch[F[_], A, B](settings: Settings[F, A, B], emit: Option[Emit[F, A, B]])(using
      F: Async[F]
  ): F[Engine[F, A, B]] =
    F.monotonic.flatMap { now =>
      F.defer {
        val workers = FiberGroup.unsafe[F]
        val producers = FiberGroup.unsafe[F]
        val engine = wire(settings, emit, now, workers, producers)
        producers.start(engine.produce).as(engine)
      }
    }

  /*
   * The run's parts, built by plain constructors in one effect rather than by a chain of effects: every step
   * of such a chain is a closure of its own, and a JVM makes each closure's class the first time it runs it,
   * even with an ahead-of-time cache, which cannot hold Scala's (serializable) closures (ADR 0020).
   */
  private def wire[F[_], A, B](
      settings: Settings[F, A, B],
      emit: Option[Emit[F, A, B]],
      startedAt: FiniteDuration,
      workers: FiberGroup[F],
      producers: FiberGroup[F]
  )(using F: Async[F]): Engine[F, A, B] =
    given Parallel[F] = parallelForGenSpawn[F, Throwable]
    val keyOf = settings.order match
      case TaskOrder.ByKey(f) => Some((a: A) => f(a): Any)
      case _ => None
    val window = settings.order match
      case TaskOrder.InputOrder(w) =>
        Some(OrderWindow.unsafe[F](w.getOrElse(Defaults.reorderWindow(settings.limit.initial))))
      case _ => None
    // built last, from the parts below; the stop and the pool reach it only when the run ends
    var engine: Engine[F, A, B] = null
    val ledger = new Ledger[A](settings.queueWaits)
    val buffer = TaskBuffer.unsafe[F, A](settings.bufferCapacity, keyOf, settings.queueWaits)
    val stop = new Stop(buffer, Deferred.unsafe[F, Stop.Request], onRequest = F.defer(engine.requested))
    val record = new Recorder(settings.policy, emit, ledger, window, stop.requested, stop.request)
    val path = new TaskPath(settings, buffer, ledger, window, record, stop.requested)
    val pool =
      WorkerPool.unsafe[F](settings.limit.initial, workers, onExit = F.defer(engine.exited))(pool =>
        F.uncancelable(poll => new Worker(path, pool, poll).life)
      )
    val sourceErrors = Ref.unsafe[F, List[Throwable]](Nil)
    val producersDone = Deferred.unsafe[F, Unit]
    engine = new Engine(
      startedAt = startedAt,
      ledger = ledger,
      buffer = buffer,
      pool = pool,
      record = record,
      stop = stop,
      ending = Deferred.unsafe[F, Boolean],
      conductor = Deferred.unsafe[F, Fiber[F, Throwable, Unit]],
      result = Deferred.unsafe[F, Summary[A]],
      sourceErrors = sourceErrors,
      producersDone = producersDone,
      workers = workers,
      producers = producers,
      produce = new Producer(ledger, buffer, pool, sourceErrors).all(settings.source.producers) *>
        producersDone.complete(()).void
    )
    engine
