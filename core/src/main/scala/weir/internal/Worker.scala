package weir.internal

import cats.effect.kernel.{Async, Outcome as FiberOutcome, Poll}
import cats.syntax.all.*
import weir.{TaskInterrupted, TaskTimedOut}
import weir.internal.Worker.Resume

import scala.annotation.tailrec
import scala.concurrent.duration.*

/**
 * One worker of a run: the loop that applies the task run's machine ([[RunPhase]]) — take a task, run it,
 * record it, hand its key on, take the next — until the buffer is finished (`life` ends with false) or the
 * pool has too many workers (true: it retired).
 *
 * ==One transition function==
 * [[step]] is the machine's transition: it runs a phase's step and goes on to the next phase, as a plain
 * call while the phase needs no wait and no effect, and otherwise returns the phase's effect, whose
 * continuation (built once per worker: the `val`s below) steps on. The stages' plain steps
 * ([[TaskPath.tryTake]], [[TaskPath.ready]], [[Recorder.succeeded]], [[TaskPath.handOn]]) complete when their
 * stage has nothing to wait for, so a run whose settings use no stage runs each task as the handler and one
 * clock reading, which ends a task and serves as the next one's start (the register `clocked`).
 *
 * The registers — the task, its attempts, its start, its result, its interruption's registration — are
 * written and read by [[step]] and its continuations only, which run one after another on this worker's
 * fiber.
 *
 * ==Cancellation==
 * Its whole life is masked: it can be cancelled only where it waits (a take, an admission, a permit, a
 * retry's backoff) or runs the handler, all inside `poll`. One finalizer for the worker's life records the
 * task interrupted when the phase holds it ([[RunPhase.holdsTask]]: from its start to its record); a
 * cancellation before the start is recorded by the stage that waited ([[TaskPath.enter]], not started) or by
 * the buffer (a take's element goes back). No poll lies between a start and the handler, or between the
 * end of an attempt and the record, so every task taken ends recorded or not started exactly once.
 *
 * An [[weir.Interruptible]] task's interruption cancels this worker's fiber while the task's attempt runs
 * ([[UnsafeInterruptibleAttempt]]): the finalizer records the task failed with the interruption's reason, and
 * leaves the task in its slot, where the pool finds it and starts a worker in this one's place that goes on
 * after it ([[life]]), as this one would have after recording it: its key's next task, then any.
 *
 * ==Task timeout==
 * In a run with a task timeout, the worker arms its attempts' deadline and keeps one standby, a worker that
 * watches it ([[DeadlineTimer]]). An attempt that overruns is cancelled with this worker's fiber; the
 * finalizer leaves the task to the standby ([[Resume.TimedOut]]), which takes this worker's place and goes
 * on from the attempt's end, failed with [[weir.TaskTimedOut]]: retried, or recorded.
 */
private[weir] final class Worker[F[_], A, B](
    path: TaskPath[F, A, B],
    pool: WorkerPool[F, Resume[F, A]],
    slot: WorkerPool.Slot[F, Resume[F, A]],
    poll: Poll[F]
)(using
    F: Async[F]
) extends UnsafeInterruptibleAttempt.Owner:
  import RunPhase.*
  import path.record

  private var phase: RunPhase = Taking // what the finalizer asks: whether a started task is unrecorded
  private var task: Held[A] = NoTask // the task of the phase (the last one recorded, in the phases after it)
  private var tries = 1 // its attempts so far, the one running included
  private var t0 = 0L // when it started (monotonic nanoseconds)
  private var now = 0L // the last clock reading
  private var clocked = false // whether `now` ended the task before and may serve as the next one's start
  private var result: Either[Throwable, B] = scala.compiletime.uninitialized // the last attempt's end
  // the interruptible attempt of the task last started, which the finalizer asks why the fiber was cancelled
  private var interruptible: UnsafeInterruptibleAttempt.Registration = UnsafeInterruptibleAttempt.Unregistered
  private var attemptAt = 0L // when the attempt running started, in a run with a task timeout
  private val timer = path.timeout.map(limit => new DeadlineTimer(limit, pool)) // none: no task timeout

  def attempting(attempt: UnsafeInterruptibleAttempt): Unit = interruptible = attempt

  val interrupt: () => Unit = () => pool.interrupt(slot)

  /** The task of the phase; every phase after [[RunPhase.Taking]]'s first take has one. */
  private def held: Entry[A] =
    task match
      case entry: Entry[A] => entry
      case NoTask => throw new IllegalStateException(s"a worker in phase $phase holds no task")

  /**
   * The transition: runs `p`'s step, plain while it needs no effect, and returns the first effect, whose
   * continuation steps on. A plain call, made inside an effect.
   */
  @tailrec private def step(p: RunPhase): F[Boolean] =
    phase = p
    p match
      case Taking =>
        val took = if pool.overLimit then Later else path.tryTake()
        took match
          case entry: Entry[A] => task = entry; step(Taken)
          case _ => clocked = false; slowTake
      case Taken =>
        if path.ready(held) then step(Starting)
        else path.enter(poll, held).flatMap(entered)
      case Starting =>
        path.started()
        tries = 1
        if clocked then
          clocked = false
          begin(now)
          step(Attempting)
        else clockThenAttempting
      case Attempting =>
        val entry = held
        path.register(entry.task, asked = tries > 1, this) match
          case UnsafeInterruptibleAttempt.Unregistered if timer.isEmpty =>
            poll(path.attempt(entry.task)).flatMap(ended)
          case _: UnsafeInterruptibleAttempt | UnsafeInterruptibleAttempt.Unregistered =>
            timer.foreach(_.arm(attemptAt)) // right before the attempt: no effect lies between
            poll(path.attempt(entry.task)).flatMap(endedGuarded)
          case UnsafeInterruptibleAttempt.Refused(reason) =>
            result = Left(new TaskInterrupted(reason))
            step(Ended)
      case Ended =>
        result match
          case Left(error) if path.retrying(error, tries) => step(BackingOff)
          case _ => clockThenRecording
      case BackingOff => path.backoff(poll, held.task, tries, this).flatMap(retried)
      case Recording =>
        val entry = held
        interruptible = UnsafeInterruptibleAttempt.Unregistered
        val latency = now - t0
        result match
          case Right(value) =>
            record.succeeded(entry, value, latency, tries) match
              case None => step(HandingOn)
              case Some(rest) => rest.flatMap(afterEffect)
          case Left(error) => record.failed(entry, error, latency.nanos, tries).flatMap(afterEffect)
      case HandingOn =>
        val entry = held
        path.handOn(entry, andTake = entry.keyed && !pool.overLimit) match
          case following: Entry[A] =>
            task = following // claimed for this worker
            clocked = true
            step(Taken)
          case Released =>
            clocked = true
            step(Taking)
          case _ => step(HandingOnLater) // Later: the hand-on must wake a producer
      case HandingOnLater => path.handOnLater(held.key).flatMap(handedOn)
      case Retired => F.pure(true)
      case Finished => F.pure(false)

  /** The slow take: retires if the pool is over its limit; otherwise waits for a task. */
  private val slowTake: F[Boolean] =
    pool.tryRetire.flatMap(retired => if retired then step(Retired) else path.take(poll).flatMap(slowTook))

  private val slowTook: Option[Entry[A]] => F[Boolean] =
    case Some(entry) => task = entry; step(Taken)
    case None => path.isFinished.flatMap(done => step(if done then Finished else Taking))

  /** After the stages' effects: the task starts, or it was recorded and its key goes on. */
  private val entered: Boolean => F[Boolean] = admitted =>
    if admitted then
      clocked = false // the stages' effects took time: the task's start is a reading of its own
      step(Starting)
    else afterEffect(())

  /** After a task's record or refusal that took an effect: its key's next task, or any. */
  private val afterEffect: Any => F[Boolean] = _ =>
    clocked = false
    step(if held.keyed then HandingOnLater else Taking)

  private def begin(at: Long): Unit =
    t0 = at
    attemptAt = at
    path.waited(held, at)

  private val startedAt: FiniteDuration => F[Boolean] = at =>
    begin(at.toNanos)
    step(Attempting)

  private val ended: Either[Throwable, B] => F[Boolean] = r =>
    result = r
    step(Ended)

  /**
   * After an attempt that was registered with its interruption or ran against its deadline: its end if the
   * end came before both; otherwise the interruption's or the standby's cancellation of this fiber is under
   * way, and it lands here, in `poll`.
   */
  private val endedGuarded: Either[Throwable, B] => F[Boolean] = r =>
    timer match
      case Some(t) if !t.disarm() => awaitCancellation
      case _ =>
        interruptible match
          case attempt: UnsafeInterruptibleAttempt => if attempt.ended() then ended(r) else awaitCancellation
          case _ => ended(r)

  private val awaitCancellation: F[Boolean] = poll(F.never)

  private val retried: Unit => F[Boolean] = _ =>
    tries += 1
    if timer.isEmpty then step(Attempting) else clockThenRetry

  private val retryAt: FiniteDuration => F[Boolean] = at =>
    attemptAt = at.toNanos
    step(Attempting)

  private val endedAt: FiniteDuration => F[Boolean] = at =>
    now = at.toNanos
    step(Recording)

  private val handedOn: Option[Entry[A]] => F[Boolean] =
    case Some(following) => task = following; step(Taken) // claimed for this worker
    case None => step(Taking)

  // built once per worker, after the continuations they use (a `val` reads them when it is built)
  private val clockThenAttempting: F[Boolean] = F.monotonic.flatMap(startedAt)
  private val clockThenRecording: F[Boolean] = F.monotonic.flatMap(endedAt)
  private val clockThenRetry: F[Boolean] = F.monotonic.flatMap(retryAt)

  /**
   * The worker's life: from a take, from what its slot says to go on from (see the class comment), or, for
   * a standby, from its watch of another worker's deadline; with its own standby in a run with a timeout.
   */
  def life: F[Boolean] =
    val first = F.defer(slot.resumeAfter() match
      case None => keepStandby(step(Taking))
      case Some(Resume.After(entry)) =>
        task = entry
        keepStandby(afterEffect(()))
      case Some(Resume.Watch(deadline, of)) =>
        DeadlineTimer.watch(deadline, poll).flatMap(fired => if fired then takeOver(of) else F.pure(false))
      case Some(other) => F.raiseError(new IllegalStateException(s"a worker cannot start from $other")))
    F.guaranteeCase(first) {
      case FiberOutcome.Canceled() => F.defer(cancelled)
      case _ => dismiss.void
    }

  private def keepStandby(next: F[Boolean]): F[Boolean] =
    timer match
      case None => next
      case Some(t) => t.start(Resume.Watch(t.deadline, slot)) *> next

  private val dismiss: F[Boolean] = timer.fold(F.pure(true))(_.dismiss)

  /**
   * A standby whose watch fired: cancels the worker it watched (waiting for its finalizers, which leave
   * this one the task: [[cancelled]]) and goes on in its place, counted in its stead, from what it left.
   * Not cancelable until the task is this worker's: a cancellation then lands in the next `poll`, and the
   * finalizer records the task.
   */
  private def takeOver(of: WorkerPool.Slot[F, Resume[F, A]]): F[Boolean] =
    pool.fiberOf(of).flatMap(_.cancel) *> F.defer {
      slot.counted = true
      of.successor match
        case Some(Resume.TimedOut(entry, n, start)) =>
          task = entry
          tries = n
          t0 = start
          phase = Ended
          result = Left(new TaskTimedOut(path.timeout.getOrElse(Duration.Zero)))
          keepStandby(step(Ended))
        case Some(Resume.After(entry)) =>
          task = entry
          keepStandby(afterEffect(()))
        case other => F.raiseError(new IllegalStateException(s"a standby took over from $other"))
    }

  /**
   * What a cancelled worker leaves: the task it was running, if any, is recorded interrupted, with its
   * interruption's reason when that is why the fiber was cancelled (the task is then left in the slot, for
   * the worker that takes this one's place); or, when its standby fired the attempt's deadline, it is left
   * to the standby, which takes this one's place: recorded first if its interruption came too, else as an
   * attempt that timed out. The interruption is asked first, so that a task told to stop is not retried.
   */
  private def cancelled: F[Unit] =
    if !phase.holdsTask then dismiss.void
    else
      val entry = held
      phase = Recording
      val reason = interruptible match
        case attempt: UnsafeInterruptibleAttempt => attempt.cancelled()
        case _ => None
      interruptible = UnsafeInterruptibleAttempt.Unregistered
      dismiss.flatMap { dismissed =>
        if !dismissed && reason.isEmpty then F.delay(slot.successor = Some(Resume.TimedOut(entry, tries, t0)))
        else
          F.monotonic.flatMap { at =>
            val latency = (at.toNanos - t0).nanos
            reason match
              case None => record.interrupted(entry, latency, tries)
              case Some(why) =>
                record.failed(entry, new TaskInterrupted(why), latency, tries) *> F.delay {
                  if dismissed then slot.interrupted = Some(Resume.After(entry))
                  else slot.successor = Some(Resume.After(entry))
                }
          }
      }

private[weir] object Worker:

  /**
   * What a worker starts from other than a take ([[WorkerPool.Slot]]): what a cancelled worker left the
   * worker in its place, or the worker a standby watches. Made only when a worker is replaced or a standby
   * started, never per task.
   */
  sealed trait Resume[F[_], A]

  object Resume:
    /** Go on after `entry`, which the cancelled worker recorded: its key's next task, then any. */
    final case class After[F[_], A](entry: Entry[A]) extends Resume[F, A]

    /** Attempt `tries` of `entry`, started at `start` (nanoseconds), overran its deadline: go on from its end. */
    final case class TimedOut[F[_], A](entry: Entry[A], tries: Int, start: Long) extends Resume[F, A]

    /** A standby: watch `deadline`, that of the worker in `of`, and take its place when an attempt overruns. */
    final case class Watch[F[_], A](deadline: UnsafeDeadline, of: WorkerPool.Slot[F, Resume[F, A]])
        extends Resume[F, A]
