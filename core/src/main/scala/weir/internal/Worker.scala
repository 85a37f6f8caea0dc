package weir.internal

import cats.effect.kernel.{Async, Poll}
import cats.syntax.all.*
import weir.{TaskInterrupted, TaskTimedOut}

import scala.annotation.tailrec
import scala.concurrent.duration.*

/**
 * One worker of a run: the loop that applies the task run's machine ([[RunPhase]]) — take a task, run it,
 * record it, hand its key on, take the next — until the buffer is finished (`life` ends with false) or the
 * pool has too many workers (true: it retired).
 *
 * [[step]], the transition, runs phases as plain calls while they need no wait and no effect, else returns
 * the phase's effect, whose continuation (a `val` below) steps on. The registers are written and read by
 * [[step]] and its continuations only, on this worker's fiber.
 *
 * Its whole life is masked: it can be cancelled only where it waits (a take, an admission, a permit, a
 * retry's backoff) or runs the handler, all inside `poll`. One finalizer records the task interrupted when
 * the phase holds it ([[RunPhase.holdsTask]]); before the start, the stage that waited records it
 * ([[TaskPath.enter]]) or the buffer takes it back. No poll lies between a start and the handler, or
 * between an attempt's end and the record, so every task taken ends recorded or not started exactly once.
 *
 * An [[weir.Interruptible]] task's interruption cancels this worker's fiber while its attempt runs
 * ([[UnsafeInterruptibleAttempt]]): the finalizer records the task failed with the interruption's reason and
 * leaves it in the slot, where the pool finds it and starts a worker in this one's place that goes on after
 * it ([[resumeFrom]]): its key's next task, then any. An attempt that overruns its task timeout cancels the
 * fiber the same way; the worker's standby takes this one's place and goes on with it ([[DeadlineTimer]]).
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
  private def held: Entry[A] = task match
    case entry: Entry[A] => entry
    case NoTask => throw new IllegalStateException(s"a worker in phase $phase holds no task")

  /** The transition: runs `p`'s step, plain while it needs no effect; returns the first effect. A plain call. */
  @tailrec private def step(p: RunPhase): F[Boolean] =
    phase = p
    p match
      case Taking =>
        val took = if pool.overLimit then Later else path.tryTake()
        took match
          case entry: Entry[A] => task = entry; step(Taken)
          case _ =>
            clocked = false
            if pool.overLimit then retireOrTake else slowTake
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
            timer match // armed right before the attempt, no effect between (a match: no closure per attempt)
              case Some(t) => t.arm(attemptAt)
              case None => ()
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

  private val slowTook: Option[Entry[A]] => F[Boolean] =
    case Some(entry) => task = entry; step(Taken)
    case None => path.isFinished.flatMap(done => step(if done then Finished else Taking))

  /** The slow take: waits for a task. Built once (a take's effect runs again as it is). */
  private val slowTake: F[Boolean] = path.take(poll).flatMap(slowTook)

  /** The pool looked over its limit: the worker retires, unless another did first; then the slow take. */
  private val retireOrTake: F[Boolean] =
    pool.tryRetire.flatMap(retired => if retired then step(Retired) else slowTake)

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

  /** After an attempt registered with its interruption or run against its deadline: its end if that came first. */
  private val endedGuarded: Either[Throwable, B] => F[Boolean] = r =>
    val first = timer.forall(_.disarm()) &&
      (interruptible match
        case attempt: UnsafeInterruptibleAttempt => attempt.ended()
        case _ => true)
    if first then ended(r) else poll(F.never) // the cancellation lands in this wait

  private val retried: Unit => F[Boolean] = _ =>
    tries += 1
    if timer.isEmpty then step(Attempting) else clockThenRetry

  private val endedAt: FiniteDuration => F[Boolean] = at =>
    now = at.toNanos
    step(Recording)

  private val handedOn: Option[Entry[A]] => F[Boolean] =
    case Some(following) => task = following; step(Taken) // claimed for this worker
    case None => step(Taking)

  // built once per worker, after the continuations they use (a `val` reads them when it is built)
  private val clockThenAttempting: F[Boolean] = F.monotonic.flatMap(startedAt)
  private val clockThenRecording: F[Boolean] = F.monotonic.flatMap(endedAt)
  private val clockThenRetry: F[Boolean] = F.monotonic.flatMap { at =>
    attemptAt = at.toNanos; step(Attempting)
  }

  /** The worker's life: from a take, or from what its slot says ([[resumeFrom]]); with its standby, if timed. */
  def life: F[Boolean] =
    val first = F.defer(slot.resumeAfter().fold(keepStandby(step(Taking)))(resumeFrom))
    F.guaranteeCase(first)(outcome => if outcome.isCanceled then F.defer(cancelled) else dismiss.void)

  /**
   * Goes on from what a cancelled worker left: after a task it recorded; from the end of an attempt that
   * overran its deadline; or, for a standby, from its watch of a worker's deadline, then what that one left.
   */
  private def resumeFrom(from: Resume[F, A]): F[Boolean] =
    from match
      case Resume.After(entry) =>
        task = entry
        keepStandby(afterEffect(()))
      case Resume.TimedOut(entry, n, start, limit) =>
        task = entry; tries = n; t0 = start
        result = Left(new TaskTimedOut(limit))
        phase = Ended // holds the task: a cancellation from here on is recorded
        keepStandby(step(Ended))
      case Resume.Watch(deadline, of) =>
        DeadlineTimer.watch(deadline, poll).flatMap(fired =>
          if fired then DeadlineTimer.relieve(pool, of, slot).flatMap(resumeFrom) else F.pure(false)
        )

  private def keepStandby(next: => F[Boolean]): F[Boolean] =
    timer.fold(next)(t => t.start(Resume.Watch(t.deadline, slot)).flatMap(_ => next))
  private val dismiss: F[Boolean] = timer.fold(F.pure(true))(_.dismiss)

  /**
   * What a cancelled worker leaves: the task it ran, if any, recorded interrupted, with its interruption's
   * reason if that is why (then left to the worker in its place, to go on after); or, if its standby fired
   * the attempt's deadline, left to the standby: recorded first if the interruption came too (asked first:
   * a task told to stop is not retried), else as a timed-out attempt.
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
        (reason, timer) match
          case (None, Some(t)) if !dismissed =>
            F.delay(slot.successor = Some(Resume.TimedOut(entry, tries, t0, t.limit)))
          case _ =>
            F.monotonic.flatMap { at =>
              val latency = (at.toNanos - t0).nanos
              reason match
                case None => record.interrupted(entry, latency, tries)
                case Some(why) =>
                  val after: Option[Resume[F, A]] = Some(Resume.After(entry))
                  record.failed(entry, new TaskInterrupted(why), latency, tries) *>
                    F.delay(if dismissed then slot.interrupted = after else slot.successor = after)
            }
      }
