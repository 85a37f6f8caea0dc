package weir.internal

import cats.effect.kernel.{Async, Deferred, Ref, Resource}
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
 * and an end, decided by the state machine [[RunEnd]]: the producers' end, the pool's exit, a drain, a
 * fail-fast, the conductor's deadline and the release are its events, and this class runs the action each
 * returns ([[perform]]). The parts reach the run's end through methods of this class ([[signal]],
 * [[request]]), which is why they are built here, as fields, rather than passed in.
 *
 * Every task goes received → (buffered) → started → succeeded | failed, or received → not started, and
 * each transition is recorded once, on every path: the handler's cancellation is recorded by the worker
 * that ran it, an interrupted offer hands its rest to the ledger, a cancelled take puts its element back,
 * and whatever the buffer still holds at the end is returned as not started.
 *
 * The parts are built by plain constructors in one effect (the constructor, run by [[Engine.start]]) rather
 * than by a chain of effects: every step of such a chain is a closure of its own, and a JVM makes each
 * closure's class the first time it runs it, even with an ahead-of-time cache, which cannot hold Scala's
 * (serializable) closures (ADR 0020).
 */
private[weir] final class Engine[F[_], A, B] private (
    settings: Settings[F, A, B],
    emit: Option[Outcomes[F, A, B]],
    startedAt: FiniteDuration
)(using F: Async[F])
    extends Running[F, A]:
  import RunEnd.{Action, Event}

  private given Parallel[F] = parallelForGenSpawn[F, Throwable]

  private val end = new RunEnd.Cell
  // the request the run stops for, once kept: the stages that wait (a permit) race it, a record reads it
  private val requested = Deferred.unsafe[F, RunEnd.Request]
  private val result = Deferred.unsafe[F, Summary[A]]
  private val sourceErrors = Ref.unsafe[F, List[Throwable]](Nil)
  private val workers = FiberGroup.unsafe[F]
  private val producers = FiberGroup.unsafe[F]
  private val conductor = FiberGroup.unsafe[F] // the conductor, if a request started one

  private val ledger = new Ledger[A](settings.queueWaits, settings.failureSample)
  private val window = settings.order match
    case TaskOrder.InputOrder(w) =>
      Some(OrderWindow.unsafe[F](w.getOrElse(Defaults.reorderWindow(settings.limit.initial))))
    case _ => None
  private val buffer =
    val keyOf = settings.order match
      case TaskOrder.ByKey(f) => Some((a: A) => f(a): Any)
      case _ => None
    TaskBuffer.unsafe[F, A](settings.bufferCapacity, keyOf, settings.queueWaits)
  private val record = new Recorder(settings.policy, emit, ledger, window, requested, request)
  private val pool =
    val path = new TaskPath(settings, buffer, ledger, window, record, requested)
    WorkerPool.unsafe[F, Resume[F, A]](
      settings.limit.initial,
      workers,
      onExit = signal(Event.WorkersLeft).void
    )((pool, slot) =>
      F.uncancelable(poll => new Worker(path, pool, slot, poll).life)
    )
  private val produce: F[Unit] =
    new Producer(ledger, buffer, pool, sourceErrors, settings.source.producers).all *>
      signal(Event.SourcesEnded).void

  def join: F[Summary[A]] = result.get

  def drain(deadline: FiniteDuration): F[Summary[A]] = requestDrain(deadline) *> result.get

  def requestDrain(deadline: FiniteDuration): F[Unit] =
    F.raiseError(new IllegalArgumentException(s"drain deadline must be >= 0, was: $deadline"))
      .whenA(deadline < Duration.Zero) *> request(StopReason.Drained, deadline).void

  def setLimit(n: Int): F[Unit] =
    F.raiseError(new IllegalArgumentException(s"concurrency limit must be > 0, was: $n")).whenA(n <= 0) *>
      pool.setLimit(n).flatMap { room =>
        if room > 0 then buffer.size.flatMap(b => pool.grow(math.min(b, room)).getOrElse(F.unit))
        else if room < 0 then buffer.wake(-room)
        else F.unit
      }

  def snapshot: F[Snapshot] =
    (buffer.size, buffer.parks, pool.limit, pool.live, F.monotonic).tupled.flatMap {
      (buffered, parks, limit, live, now) =>
        F.delay(ledger.snapshot(
          now - startedAt,
          buffered = buffered,
          limit = limit,
          workers = live,
          parks = parks,
          placed = buffer.unsafe.inlet.placed
        ))
    }

  def latencies: F[DurationHistogram] = F.delay(ledger.latencyHistogram)

  def queueWaits: F[Option[DurationHistogram]] = F.delay(ledger.queueWaitHistogram)

  def metrics(every: FiniteDuration): Stream[F, Snapshot] =
    if every <= Duration.Zero then
      Stream.raiseError[F](new IllegalArgumentException(s"metrics interval must be > 0, was: $every"))
    else
      (Stream.eval(snapshot) ++ Stream.fixedDelay[F](every).evalMap(_ => snapshot))
        .interruptWhen(result.get.as(Right(()): Either[Throwable, Unit])) ++ Stream.eval(snapshot)

  // ---- the end of the run: events in, actions out ([[RunEnd]]) -------------------------------------

  /**
   * Starts the producers and, when the source's tasks can be interrupted, the pool's interrupter, closed
   * with the workers. Run once, by [[Engine.start]].
   */
  private def launch: F[Unit] =
    workers.start(pool.interrupter).whenA(settings.source.refusable) *> producers.start(produce).void

  /**
   * Asks the run to stop (a drain, a fail-fast): true for the request that is kept (the first). Any request
   * stops the buffer before it returns, so that nothing starts from then on. Not cancelable.
   */
  private def request(reason: StopReason, deadline: FiniteDuration): F[Boolean] =
    signal(Event.Requested(RunEnd.Request(reason, deadline))).map {
      case Action.Conduct(_) => true
      case _ => false
    }

  /**
   * The release of the run's resource: a request, unless the run has ended or stops already; then waits for
   * the summary and cancels whatever fiber is left.
   */
  private def release(grace: FiniteDuration): F[Unit] = signal(Event.Release(grace)).void

  /**
   * Applies `event` to the run's end and runs the action it returns, in one step that cannot be cancelled:
   * a state changed whose action never ran would leave the run without an end.
   */
  private def signal(event: Event): F[Action] =
    F.uncancelable(_ => F.delay(end.signal(event)).flatTap(perform))

  private def perform(action: Action): F[Unit] =
    action match
      case Action.Nothing => F.unit
      case Action.StopTaking => buffer.stop
      case Action.Conduct(request) => conduct(request)
      case Action.Wind => buffer.close *> pool.finishing(stop = false)
      case Action.Kill(killWorkers, killProducers) =>
        (pool.kill.whenA(killWorkers), producers.close.whenA(killProducers)).parTupled *>
          signal(Event.Killed).void
      case Action.Finish(request) => finish(request)
      case Action.Release(request) =>
        // once the summary is written nothing waits on the conductor or on a group: their fibers end at once
        request.traverse_(conduct) *> result.get *> conductor.close *> producers.close *> workers.close

  /**
   * The first request: the buffer stops handing out tasks, the request is published to the stages that wait,
   * and the conductor arms the pool to end, waits for the end until the deadline, and then has what is left
   * interrupted ([[RunEnd.Event.DeadlinePassed]]).
   */
  private def conduct(request: RunEnd.Request): F[Unit] =
    val conducting =
      pool.finishing(stop = true) *>
        F.timeoutTo(result.get.void, request.deadline, signal(Event.DeadlinePassed).void)
    buffer.stop *> requested.complete(request) *> conductor.start(conducting).void

  /** Returns what the buffer still holds as not started, and writes the summary. */
  private def finish(request: Option[RunEnd.Request]): F[Unit] =
    for
      left <- buffer.remaining
      _ <- F.delay(ledger.notStarted(left))
      errors <- sourceErrors.get
      reason = RunEnd.reason(request.map(_.reason), errors)
      summary <- F.monotonic.flatMap(now =>
        F.delay(ledger.summary(now - startedAt, reason, buffer.unsafe.inlet.placed))
      )
      why = RunEnd.notStartedReason(reason)
      _ <-
        summary.unstarted.traverse_(task => record.publish(Long.MaxValue, TaskOutcome.NotStarted(task, why)))
      _ <- result.complete(summary)
    yield ()

private[weir] object Engine:

  /**
   * Starts a run; releasing it stops the run (see [[Pipeline.start]]) and leaks no fiber.
   *
   * One acquire and one release rather than a resource per part: a run's set-up and end run once per run,
   * so the JVM runs them at its slowest tier for a long time, and every step of a composed resource is
   * more of that code.
   */
  def start[F[_], A, B](settings: Settings[F, A, B], emit: Option[Outcomes[F, A, B]])(using
      F: Async[F]
  ): Resource[F, Running[F, A]] =
    Resource.make(
      F.monotonic.flatMap(now =>
        F.defer { val engine = new Engine(settings, emit, now); engine.launch.as(engine) }
      )
    )(_.release(settings.releaseGrace))
