package weir.internal

import cats.effect.kernel.{Async, Poll}
import cats.effect.syntax.all.*
import cats.syntax.all.*
import weir.TaskInterrupted

import scala.concurrent.duration.*

/**
 * One worker of a run: take a task, run it through the chain of the run's [[TaskPath]], loop — until the
 * buffer is finished (`life` ends with false) or the pool has too many workers (true: it retired).
 *
 * ==The chain, as continuations==
 * The worker composes the path's stages once, into continuations built when it starts (the `val`s
 * below), and runs each stage's plain step inside them: the take ([[TaskPath.tryTake]]), the retire check,
 * admit and permit ([[TaskPath.ready]]), the started and succeeded counters, the latency, the window's mark
 * ([[Recorder.succeeded]]) and the key's hand-on ([[TaskPath.handOn]]) are plain calls in the
 * continuations of the handler and of one clock reading, which also serves as the next task's start. A
 * stage's effect runs only when its plain step cannot complete — a wait, a wake-up, an outcome to
 * publish, a failure, a retry — so a run whose settings use no such stage runs each task as the handler
 * and one clock reading, whatever stages the engine has.
 *
 * Whatever comes next — a task taken by the fast take or the slow one, handed on by its key, or nothing —
 * goes through one decision, [[dispatch]]: nothing taken, the slow take; a task ready to start, its start;
 * any other task, the stages' effects ([[TaskPath.enter]]).
 *
 * ==Cancellation==
 * Its whole life is masked: it can be cancelled only where it waits (a take, an admission, a permit, a
 * retry's backoff) or runs the handler, all inside `poll`. A task is `current` from the moment it is
 * counted started until its record begins, and one finalizer for the worker's life records it
 * interrupted; a cancellation before the start is recorded by the stage that waited ([[TaskPath.enter]],
 * not started) or by the buffer (a take's element goes back). No poll lies between a start and the
 * handler, or between clearing `current` and the end of the record, so every task taken ends recorded or
 * not started exactly once.
 *
 * An [[weir.Interruptible]] task's interruption cancels this worker's fiber while the task's attempt runs
 * ([[InterruptibleAttempt]]): the finalizer records the task failed with the interruption's reason, and
 * leaves the task in its slot, where the pool finds it and starts a worker in this one's place that goes on
 * after it ([[life]]), as this one would have after recording it: its key's next task, then any.
 *
 * The mutable fields are confined to this worker's fiber: its continuations, which write and read them,
 * run one after another.
 */
private[weir] final class Worker[F[_], A, B](
    path: TaskPath[F, A, B],
    pool: WorkerPool[F, Entry[A]],
    slot: WorkerPool.Slot[F, Entry[A]],
    poll: Poll[F]
)(using
    F: Async[F]
) extends InterruptibleAttempt.Owner:
  import path.record

  private var current: Held[A] = NoTask // the task started and not yet recorded
  private var t0 = 0L // when it started (monotonic nanoseconds)
  private var tries = 1 // its attempts so far, the one running included
  // how it ended: written by `ended` (through `finished`) before `recorded` reads it
  private var result: Either[Throwable, B] = scala.compiletime.uninitialized
  // the interruptible attempt of `current` last started, which the finalizer asks why the fiber was cancelled
  private var interruptible: InterruptibleAttempt.Registration = InterruptibleAttempt.Unregistered

  def attempting(attempt: InterruptibleAttempt): Unit = interruptible = attempt

  /** The task started and not yet recorded, read by the continuations that run only while there is one. */
  private def started: Entry[A] =
    current match
      case entry: Entry[A] => entry
      case NoTask => throw new IllegalStateException("a worker's continuation ran with no task started")
  val interrupt: () => Unit = () => pool.interrupt(slot)

  // ---- what comes next: one decision -----------------------------------------------------------

  /**
   * Goes on with `took`: the slow take when nothing was taken; the task's start when it is
   * [[TaskPath.ready]], at the clock reading `now` when `clocked` (one already made serves), else at one of
   * its own; the stages' effects ([[enter]]) otherwise. A plain step in the continuation that took.
   */
  private def dispatch(took: Handout[A], clocked: Boolean, now: Long): F[Boolean] =
    took match
      case entry: Entry[A] =>
        if path.ready(entry) then
          start(entry)
          if clocked then attempt(now) else clockThenAttempt
        else enter(entry)
      case _ => slowTake // Later: the fast take could not complete

  private val dispatchUnclocked: Handout[A] => F[Boolean] = took => dispatch(took, clocked = false, 0L)

  /** The fast take, as one plain step; [[Later]] when the pool is over its limit (the slow take retires). */
  private def next(): Handout[A] = if pool.overLimit then Later else path.tryTake()

  /** Retires if the pool is over its limit; otherwise takes a task, waiting for one if need be. */
  private def slowTake: F[Boolean] =
    pool.tryRetire.flatMap { retired =>
      if retired then F.pure(true)
      else
        path.take(poll).flatMap {
          case Some(entry) => dispatch(entry, clocked = false, 0L)
          case None => path.isFinished.flatMap(done => if done then F.pure(false) else loop)
        }
    }

  // ---- admit, permit ------------------------------------------------------------------------------

  /** The stages in front of the attempt, as effects; then the task starts, or the worker takes another. */
  private def enter(entry: Entry[A]): F[Boolean] =
    // a task recorded without starting hands its key on, as one that ran does
    path.enter(poll, entry).flatMap(admitted => if admitted then startNow(entry) else after(entry))

  // ---- attempt ------------------------------------------------------------------------------------

  /** The task starts: counted started, and held in `current` for the finalizer. */
  private def start(entry: Entry[A]): Unit =
    path.started()
    current = entry
    tries = 1

  /** Starts `entry`, admitted by the stages' effects, at a clock reading of its own. */
  private def startNow(entry: Entry[A]): F[Boolean] =
    start(entry)
    clockThenAttempt

  /** The first attempt of the task started, from the clock reading `now`, its start. */
  private def attempt(now: Long): F[Boolean] =
    val entry = started
    t0 = now
    path.waited(entry, now)
    run(entry)

  /**
   * Attempt `tries` of `entry` (started, `t0` set), then [[ended]]: registered with the task's interruption
   * as a plain step right here, then run in `poll` ([[InterruptibleAttempt.register]]).
   */
  private def run(entry: Entry[A]): F[Boolean] =
    path.register(entry.task, asked = tries > 1, this) match
      case InterruptibleAttempt.Unregistered => poll(path.attempt(entry.task)).flatMap(ended)
      case _: InterruptibleAttempt => poll(path.attempt(entry.task)).flatMap(endedRegistered)
      case InterruptibleAttempt.Refused(reason) => ended(Left(new TaskInterrupted(reason)))

  /**
   * After a registered attempt: [[ended]] if the attempt's end came before its interruption; otherwise the
   * interruption's cancellation of this fiber is under way, and it lands here, in `poll`.
   */
  private val endedRegistered: Either[Throwable, B] => F[Boolean] = r =>
    interruptible match
      case attempt: InterruptibleAttempt => if attempt.ended() then ended(r) else awaitCancellation
      case _ => ended(r)

  private val awaitCancellation: F[Boolean] = poll(F.never)

  private val ended: Either[Throwable, B] => F[Boolean] = r =>
    r match
      case Left(error) =>
        path.retry(poll, started.task, error, tries, this) match
          case Some(wait) => wait.flatMap(retried)
          case None => finished(r)
      case _ => finished(r)

  private val retried: Unit => F[Boolean] = _ =>
    tries += 1
    run(started)

  private def finished(r: Either[Throwable, B]): F[Boolean] =
    result = r
    clockThenRecorded

  // ---- record, the key's hand-on, the next task ---------------------------------------------------

  /*
   * After a task: one clock reading serves as its end and, when the next task can be taken and started
   * at once, as that task's start. The record's plain step and the next take happen right here in the
   * continuation, not in a further `F.delay`: the continuation runs once, in this worker's fiber, when
   * the clock reading arrives, which is all a delay would guarantee.
   */
  private val recorded: FiniteDuration => F[Boolean] = at =>
    val entry = started
    val now = at.toNanos
    val latency = now - t0
    current = NoTask // from here on the task is the record's: no poll until its record is done
    interruptible = InterruptibleAttempt.Unregistered
    result match
      case Right(value) =>
        record.succeeded(entry, value, latency, tries) match
          case None => handOn(entry, now)
          case Some(rest) => rest.flatMap(_ => after(entry))
      case Left(error) => record.failed(entry, error, latency.nanos, tries).flatMap(_ => after(entry))

  /**
   * The key's hand-on as a plain step, then the next task from the clock reading `now`. A key released
   * takes the next task in the same step, unless the worker is to retire ([[next]]'s check).
   */
  private def handOn(entry: Entry[A], now: Long): F[Boolean] =
    path.handOn(entry, andTake = entry.keyed && !pool.overLimit) match
      case following: Entry[A] => dispatch(following, clocked = true, now) // claimed for this worker
      case Released => dispatch(next(), clocked = true, now)
      case _ => afterKey(entry.key) // Later: the hand-on must wake a producer

  /** After a task whose record took an effect: the key's next task, or any. */
  private def after(entry: Entry[A]): F[Boolean] =
    if entry.keyed then afterKey(entry.key) else loop

  /** The key's next task (claimed for this worker), or any task once the key is released. */
  private def afterKey(key: Any): F[Boolean] =
    path.handOnLater(key).flatMap {
      case Some(following) => dispatch(following, clocked = false, 0L)
      case None => loop
    }

  // built once per worker, after the continuations they use
  private val clockThenAttempt: F[Boolean] = F.monotonic.flatMap(at => attempt(at.toNanos))
  private val clockThenRecorded: F[Boolean] = F.monotonic.flatMap(recorded)
  private val loop: F[Boolean] = F.delay(next()).flatMap(dispatchUnclocked)

  /** The worker's life: from the task its slot says to go on after (see the class comment), or from a take. */
  def life: F[Boolean] =
    val first = slot.resumeAfter() match
      case None => loop
      case Some(entry) => after(entry)
    first.onCancel(F.defer(cancelled))

  /**
   * What a cancelled worker leaves: the task it was running, if any, is recorded interrupted, with its
   * interruption's reason when that is why the fiber was cancelled (the task is then left in the slot, for
   * the worker that takes this one's place).
   */
  private def cancelled: F[Unit] =
    current match
      case NoTask => F.unit
      case entry: Entry[A] =>
        current = NoTask
        val reason = interruptible match
          case attempt: InterruptibleAttempt => attempt.cancelled()
          case _ => None
        interruptible = InterruptibleAttempt.Unregistered
        F.monotonic.flatMap { at =>
          val latency = (at.toNanos - t0).nanos
          reason match
            case None => record.interrupted(entry, latency, tries)
            case Some(why) => record.failed(entry, new TaskInterrupted(why), latency, tries) *>
                F.delay(slot.interrupted = Some(entry))
        }
