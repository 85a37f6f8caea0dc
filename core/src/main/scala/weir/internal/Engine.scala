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
 * and a conductor that ends the run — naturally, or on a drain, a fail-fast or a release — and writes the
 * [[Summary]].
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
    ending: Deferred[F, Unit],
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

  // set once by `launch`, before the engine is handed out
  private var conductor: Fiber[F, Throwable, Unit] = scala.compiletime.uninitialized

  /**
   * The release of the run: asks it to stop unless it has ended, waits for its summary, then cancels
   * whatever is left: the conductor (whose last step wrote the summary), the producers, the workers. A
   * request after the end would change nothing, so a run that ended on its own makes none.
   */
  private def release(grace: FiniteDuration): F[Unit] =
    val ended = result.tryGet.flatMap {
      case Some(_) => F.unit
      case None => stop.request(StopReason.Cancelled, grace) *> result.get.void
    }
    ended *> conductor.cancel *> producers.close *> workers.close

  /*
   * `ending` is completed by whichever comes first, the pool's exit or a stop request: one wait rather than a
   * race of two, which would start two fibers and cancel one in every run. A request found here wins even if
   * the pool left meanwhile (the shutdown then finds nothing to wait for); one made after this look is one
   * made after the run ended.
   */
  private def conduct: F[Unit] =
    ending.get *> stop.requested.tryGet.flatMap {
      case None => finish // every worker left: the sources ended and the buffer was emptied
      case Some(request) => shutdown(request.deadline) *> finish
    }

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

  /** Wires a run and starts its conductor, then its producers. Run by `Resource.make`: not cancelable. */
  private def launch[F[_], A, B](settings: Settings[F, A, B], emit: Option[Emit[F, A, B]])(using
      F: Async[F]
  ): F[Engine[F, A, B]] =
    F.monotonic.flatMap { now =>
      F.defer {
        val workers = FiberGroup.unsafe[F]
        val producers = FiberGroup.unsafe[F]
        val engine = wire(settings, emit, now, workers, producers)
        F.start(engine.conduct).flatMap { conductor =>
          engine.conductor = conductor
          // the engine owns the conductor from here; should the producers fail to start, nothing would
          producers.start(engine.produce).onError { case _ => conductor.cancel }.as(engine)
        }
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
    val ledger = new Ledger[A](settings.queueWaits)
    val buffer = TaskBuffer.unsafe[F, A](settings.bufferCapacity, keyOf, settings.queueWaits)
    val ending = Deferred.unsafe[F, Unit]
    val stop = new Stop(buffer, Deferred.unsafe[F, Stop.Request], onRequest = ending.complete(()).void)
    val record = new Recorder(settings.policy, emit, ledger, window, stop.requested, stop.request)
    val path = new TaskPath(settings, buffer, ledger, window, record, stop.requested)
    val pool =
      WorkerPool.unsafe[F](settings.limit.initial, workers, onExit = ending.complete(()).void)(pool =>
        F.uncancelable(poll => new Worker(path, pool, poll).life)
      )
    val sourceErrors = Ref.unsafe[F, List[Throwable]](Nil)
    val producersDone = Deferred.unsafe[F, Unit]
    new Engine(
      startedAt = startedAt,
      ledger = ledger,
      buffer = buffer,
      pool = pool,
      record = record,
      stop = stop,
      ending = ending,
      result = Deferred.unsafe[F, Summary[A]],
      sourceErrors = sourceErrors,
      producersDone = producersDone,
      workers = workers,
      producers = producers,
      produce = new Producer(ledger, buffer, pool, sourceErrors).all(settings.source.producers) *>
        producersDone.complete(()).void
    )
