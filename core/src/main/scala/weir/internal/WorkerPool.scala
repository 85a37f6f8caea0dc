package weir.internal

import cats.effect.kernel.{Async, Fiber, Outcome as FiberOutcome}
import cats.syntax.all.*
import weir.internal.WorkerPool.Slot

import java.util.concurrent.atomic.AtomicReference
import scala.annotation.tailrec

/**
 * An elastic pool of long-lived workers under a limit that may change while it runs.
 *
 * Workers are started lazily ([[grow]]), never more than `limit` at once, and each serves many tasks:
 * there is no fiber per task. A worker asks [[tryRetire]] between tasks and leaves when the pool has more
 * workers than the limit allows, so lowering the limit never interrupts a running task.
 *
 * Every worker is a fiber of `workers`; cancelling them all is closing it. A worker that ends in any
 * way (left, retired, failed, cancelled) is counted out exactly once, except one cancelled for an
 * interruption ([[interrupt]]): another worker takes its place, counted in its stead, and goes on from the
 * task it was running ([[Slot.resumeAfter]]); and one cancelled by its standby ([[standby]], a worker
 * started uncounted to keep its task timeout), which takes its place, counted in its stead from then on.
 *
 * The pool's part in the run's end ([[RunEnd]]): the run arms it ([[finishing]]) when the sources end or a
 * stop is requested, and from then on its last worker's exit is reported to the run (`onExit`, the event
 * [[RunEnd.Event.WorkersLeft]]); the run has it [[kill]] its workers when a stop's deadline passes.
 */
private[weir] final class WorkerPool[F[_], R] private (
    state: AtomicReference[WorkerPool.State],
    onExit: F[Unit],
    workers: FiberGroup[F],
    body: (
        WorkerPool[F, R],
        Slot[F, R]
    ) => F[Boolean] // runs one worker; true when it retired through tryRetire
)(using F: Async[F]):

  // the workers whose fibers are to be cancelled for an interruption, written from any thread
  private val interruptions = Inbox.unsafe[F, Slot[F, R]](Int.MaxValue)

  def limit: F[Int] = F.delay(state.get.limit)
  def live: F[Int] = F.delay(state.get.live)

  /**
   * What starts up to `demand` workers, as far as the limit allows, or `None` when there is nothing to
   * start (the common case: the pool is full, or stopped), decided now with a plain read so that the
   * producer's fast path allocates nothing for it. The check is repeated atomically when the workers
   * start. A plain call, to be made inside an effect that runs what it returns.
   */
  def grow(demand: Int): Option[F[Unit]] =
    if demand <= 0 then None
    else
      val seen = state.get
      if seen.live >= seen.limit || !seen.open then None else Some(growBy(demand))

  private def growBy(demand: Int): F[Unit] =
    modify { s =>
      val n = if s.open then math.max(0, math.min(demand.toLong, s.limit.toLong - s.live).toInt) else 0
      (s.copy(live = s.live + n), n)
    }.flatMap(n => spawn(None).replicateA_(n))

  /**
   * Sets the limit; returns the change in allowed workers beyond those alive (positive: room for new
   * workers; negative: workers that should retire).
   */
  def setLimit(n: Int): F[Int] =
    modify(s => (s.copy(limit = n), n.toLong - s.live)).map(d =>
      math.max(Int.MinValue.toLong, math.min(Int.MaxValue.toLong, d)).toInt
    )

  /**
   * True when the pool has more workers than its limit allows, read now: the worker's fast path asks this
   * (a plain read, inside an effect) and calls [[tryRetire]] only when it is true.
   */
  /** True when the pool has as many workers as its limit allows or more, read now (a plain read). */
  def full: Boolean =
    val s = state.get
    s.live >= s.limit

  def overLimit: Boolean =
    val s = state.get
    s.live > s.limit

  /** Atomically leaves the pool if it has more workers than its limit allows. */
  val tryRetire: F[Boolean] =
    F.delay(state.get).flatMap { seen =>
      if seen.live <= seen.limit then F.pure(false) // the common case: a read, no write
      else modify(s => if s.live > s.limit then (s.copy(live = s.live - 1), true) else (s, false))
    }

  /**
   * Arms the pool's exit: from now on, when its last worker leaves (workers leave only when the buffer is
   * finished), `onExit` runs. With `stop`, no worker starts any more either. Not cancelable: finding the
   * pool empty and making its exit are one step.
   */
  def finishing(stop: Boolean): F[Unit] =
    F.uncancelable(_ =>
      modify { s =>
        (s.copy(draining = true, open = s.open && !stop), s.live == 0)
      }.flatMap(empty => exit.whenA(empty))
    )

  /*
   * Not cancelable: an exit whose `onExit` never ran would leave the run without an end. It may run more
   * than once (the pool armed twice while empty, a kill after the last leave): the run counts it once.
   */
  private val exit: F[Unit] = F.uncancelable(_ => onExit)

  /**
   * Cancels every worker (a stop's deadline ran out) and waits for them, then runs `onExit`. A worker
   * cancelled before its fiber ever ran has no finalizer to count it out, so the pool then counts none,
   * ignores later leaves, starts no worker, and is done. Idempotent.
   */
  def kill: F[Unit] =
    workers.close *> modify(s => (s.copy(live = 0, open = false, killed = true), ())) *> exit

  private def leave: F[Unit] =
    modify { s =>
      if s.killed then (s, false)
      else
        val live = s.live - 1
        (s.copy(live = live), live == 0 && s.draining)
    }.flatMap(last => exit.whenA(last))

  /** Applies `f` to the state by compare-and-set (`f` may run more than once: it must be pure). */
  private def modify[R](f: WorkerPool.State => (WorkerPool.State, R)): F[R] =
    @tailrec def loop(): R =
      val seen = state.get
      val (next, result) = f(seen)
      if state.compareAndSet(seen, next) then result else loop()
    F.delay(loop())

  /**
   * Has the fiber of the worker in `slot` cancelled, for an interruption of the task it runs
   * ([[UnsafeInterruptibleAttempt]]). A plain call, from any thread; the cancellation is made by [[interrupter]].
   */
  def interrupt(slot: Slot[F, R]): Unit = interruptions.trySend(slot): Unit

  /**
   * Cancels the workers [[interrupt]] names, each in a fiber of `workers` of its own (a cancellation waits
   * for the worker's finalizers), until cancelled: to be run in `workers` by a run whose tasks can be
   * interrupted, so that closing the group ends it.
   */
  val interrupter: F[Unit] =
    interruptions.stream.evalMap(slot =>
      fiberOf(slot).flatMap(f => workers.start(f.cancel).void)
    ).compile.drain

  /** The fiber of the worker in `slot`, once the fiber that started it has published it. */
  // published by the fiber that started it, which may run after the worker's first attempt
  def fiberOf(slot: Slot[F, R]): F[Fiber[F, Throwable, ?]] =
    F.defer {
      slot.fiber match
        case Some(f) => F.pure(f)
        case None => F.cede *> fiberOf(slot)
    }

  /**
   * Starts a standby: a worker not counted in the pool, which starts from `watch` and counts in the stead
   * of the worker it watches once it takes that one's place ([[Slot.successor]]); its slot, if it started.
   * A worker of a run with a task timeout keeps one, its one timer ([[DeadlineTimer]]). Not cancelable.
   */
  def standby(watch: R): F[Option[Slot[F, R]]] =
    F.defer {
      val slot = new Slot[F, R](Some(watch))
      slot.counted = false
      start(slot).map(started => if started then Some(slot) else None)
    }

  /*
   * A worker counted in by `growBy` and then not started — its group was closed meanwhile, which happens
   * when a drain's deadline kills the workers while a producer is growing the pool — is counted out again.
   * A worker cancelled for an interruption hands its place, uncounted, to a new one that goes on after its
   * task (the slot's `interrupted`, set by the worker's finalizer); one whose standby took its place
   * (`successor`) hands it to the standby. A standby is counted in nothing until it takes a place.
   */
  private def spawn(resumeAfter: Option[R]): F[Unit] =
    F.defer(start(new Slot[F, R](resumeAfter)).flatMap(started => leave.unlessA(started)))

  private def start(slot: Slot[F, R]): F[Boolean] =
    workers.startThen(F.unit.flatMap(_ => body(this, slot)), f => slot.fiber = Some(f)) {
      outcome =>
        // decided when it ends: a finalizer for the cancelled case may be built before the fiber even starts
        F.defer {
          if !slot.counted then F.unit
          else
            outcome match
              case FiberOutcome.Succeeded(retired) => retired.flatMap(r => leave.unlessA(r))
              case FiberOutcome.Canceled() =>
                if slot.successor.isDefined then F.unit
                else if slot.interrupted.isDefined then spawn(slot.interrupted)
                else leave
              case _ => leave
        }
    }

private[weir] object WorkerPool:
  /*
   * Invariant: live = workers started and not yet left (a retiring worker is counted out by tryRetire);
   * live <= limit except right after the limit was lowered; workers start only while open; once killed,
   * live is 0 for good.
   */
  final case class State(limit: Int, live: Int, open: Boolean, draining: Boolean, killed: Boolean = false)

  /**
   * One worker's place: its fiber, once started, and what it starts from. `resume` is what a worker
   * cancelled for an interruption left, for the worker that takes its place, or what a standby watches
   * (none for a new worker); `interrupted` is set by a worker's finalizer when it was cancelled so, to what
   * it leaves its replacement; `successor`, when its standby cancelled it to take its place, to what it
   * leaves the standby; `counted` is false for a standby until it takes a place. A slot is made for each
   * worker started, never for a task: its fields cost nothing per task.
   */
  final class Slot[F[_], R](private var resume: Option[R]):
    @volatile var fiber: Option[Fiber[F, Throwable, ?]] = None
    @volatile var interrupted: Option[R] = None
    @volatile var successor: Option[R] = None
    @volatile var counted: Boolean = true

    /** The task to go on after, once: read by the slot's worker as it starts, then forgotten. */
    def resumeAfter(): Option[R] =
      val r = resume
      resume = None
      r

  /**
   * A pool whose workers run `body`; `onExit` runs when the pool, armed by [[WorkerPool.finishing]], has no
   * worker left, or is killed. A plain call, for building a run's parts in one effect (the [[Engine]]).
   */
  def unsafe[F[_], R](
      initialLimit: Int,
      workers: FiberGroup[F],
      onExit: F[Unit]
  )(body: (WorkerPool[F, R], Slot[F, R]) => F[Boolean])(using F: Async[F]): WorkerPool[F, R] =
    new WorkerPool(
      new AtomicReference(State(initialLimit, 0, open = true, draining = false)),
      onExit,
      workers,
      body
    )
