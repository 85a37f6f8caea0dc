package weir.internal

import cats.effect.kernel.{Async, Deferred, Poll}
import cats.effect.syntax.all.*
import cats.syntax.all.*
import weir.*

import java.util.concurrent.ThreadLocalRandom
import scala.concurrent.duration.*
import scala.util.control.NonFatal

/**
 * What happens to a task once a worker took it from the buffer: a chain of stages, built once from the
 * settings when the run starts.
 *
 * {{{
 * admit (reorder window | key)  →  permit (rate limiter)  →  attempt (timeout, retry)  →  record
 * }}}
 *
 * Each stage has one implementation, in two parts: a plain step, which completes the stage when it needs
 * no wait and no effect, and an effect for the rest. The worker's machine ([[RunPhase]], applied by
 * [[Worker]]) runs the plain steps in its transitions and turns to a stage's effect only when the plain step
 * cannot complete. A stage a run does not use has a plain step that always completes and an effect that is
 * never run, so a run pays only for what its settings ask for, and a run without a permit, a retry or an
 * outcome stream runs its tasks without a single effect besides the handler, its clock readings and what a
 * wait or a wake-up needs (a task timeout adds two plain calls per attempt: [[DeadlineTimer]]).
 *
 * | stage | plain step | effect |
 * |---|---|---|
 * | admit | [[ready]]: the window admits the position (no window: always) | [[enter]]: wait for the window; a failed key is recorded |
 * | permit | [[ready]]: no rate limiter | [[enter]]: the limiter's permit, or a stop |
 * | attempt | [[register]] with the task's interruption; one try: [[attempt]] (the handler; the worker arms its deadline if any); [[retrying]] | [[backoff]]: a backoff and a permit |
 * | record | [[Recorder.succeeded]]: ledger and window | what it returns; the failure policy ([[Recorder.failed]]) |
 * | the key's chain | [[handOn]]: the next task parked behind the key | [[handOnLater]]: wakes a waiting producer |
 *
 * Each effect wraps only its waits in the worker's `poll` and records at the place it waits what a
 * cancellation or a stop leaves behind, so that every task taken ends in the [[Recorder]] or as not
 * started, exactly once: before the attempt, [[enter]] hands the task back as not started; from the
 * attempt on, the worker's finalizer records it interrupted.
 */
private[weir] final class TaskPath[F[_], A, B](
    settings: Settings[F, A, B],
    buffer: TaskBuffer[F, A],
    ledger: Ledger[A],
    window: Option[OrderWindow[F]],
    val record: Recorder[F, A, B],
    stopRequest: Deferred[F, RunEnd.Request]
)(using F: Async[F]):
  import TaskPath.Front

  private val retries = settings.retry

  /** The task timeout, whose deadlines the workers keep ([[DeadlineTimer]]). */
  val timeout: Option[FiniteDuration] = settings.taskTimeout
  private val unlimited = settings.rateLimit.isEmpty
  private val once = retries.maxAttempts == 1 && timeout.isEmpty // an attempt is one plain try
  private val refusable = settings.source.refusable
  // whether the run measures queue waits, asked before the type test in `waited`: a JVM whose runs do not
  // measure then never loads `TimedEntry`, and `Entry`, a class without subclasses, is tested for with one
  // comparison on every take
  private val measured = buffer.unsafe.measured

  // ---- take: where a task comes from ----------------------------------------------------------------

  /**
   * The fast take ([[UnsafeTaskBuffer.tryTake]]): the oldest claimable task, or [[Later]]. A plain call,
   * to be made inside an effect.
   */
  def tryTake(): Handout[A] = buffer.unsafe.tryTake()

  /** The slow take ([[TaskBuffer.take]]): waits in `poll`; `None` means "look again" ([[isFinished]]). */
  def take(poll: Poll[F]): F[Option[Entry[A]]] = buffer.take(poll)

  /** True once the buffer will hand out no task any more: the worker leaves. */
  def isFinished: F[Boolean] = buffer.isFinished

  /** A task starts: counted started. A plain call, inside an effect. */
  def started(): Unit = ledger.started()

  /** The queue wait of `entry`, started at `startNanos`, if the run measures queue waits. A plain call. */
  def waited(entry: Entry[A], startNanos: Long): Unit =
    if measured then
      entry match
        case timed: TimedEntry[?] => ledger.waited(startNanos - timed.enqueuedAt)
        case _ => ()

  // ---- admit and permit ---------------------------------------------------------------------------

  /**
   * The plain steps of admit and permit: whether `entry` may start now, its key having not failed, the
   * reorder window admitting its position, no rate limiter asking for a permit, and the task not refusing
   * ([[weir.Refusable]], asked last, so that nothing lies between its answer and the start). A plain read,
   * to be made inside an effect; when it is false, the task goes through [[enter]].
   */
  def ready(entry: Entry[A]): Boolean =
    unlimited && !entry.key.isInstanceOf[KeyFailure] &&
      (window match
        case Some(w) => w.admitted(entry.seq)
        case None => true) &&
      (!refusable || refusalOf(entry.task).isEmpty)

  /**
   * Admit and permit as effects, composed once, then the task's own answer: true when the task may start;
   * false when it was recorded (not started, refused, or failed) and the worker goes on with another task.
   */
  val enter: Front[F, A] =
    val admitted = F.pure(true)
    val last: Front[F, A] =
      if !refusable then (_, _) => admitted
      else
        (_, entry) =>
          refusalOf(entry.task) match
            case None => admitted
            case Some(reason) => record.refused(entry, reason).as(false)
    admit(permit(last))

  private def refusalOf(task: A): Option[String] =
    task match
      case r: Refusable => r.tryStart()
      case _ => None

  /** In input order, the reorder window's admission; per key, a key that failed; otherwise nothing. */
  private def admit(next: Front[F, A]): Front[F, A] =
    window match
      case Some(w) =>
        (poll, entry) =>
          // a stop may have come while it waited: a task admitted after the run began to stop must not
          // start, and goes back as not started (one admitted by `ready` was taken in the same step)
          w.admit(poll, entry.seq).onCancel(F.delay(ledger.notStarted(List(entry.task)))) *>
            buffer.isStopped.ifM(record.unstarted(entry).as(false), next(poll, entry))
      case None =>
        settings.order match
          case TaskOrder.ByKey(_) =>
            (poll, entry) =>
              entry.key match
                case failure: KeyFailure => // the key function is part of handling the task
                  F.delay(ledger.started()) *> record.failed(entry, failure.error, Duration.Zero, 1).as(false)
                case _ => next(poll, entry)
          case _ => next

  /** Waits for the rate limiter's permit, if there is a limiter; a stop while it waits wins. */
  private def permit(next: Front[F, A]): Front[F, A] =
    settings.rateLimit match
      case None => next
      case Some(limiter) =>
        val acquire = waitedFor(limiter)
        (poll, entry) =>
          poll(F.race(acquire, stopRequest.get))
            .onCancel(F.delay(ledger.notStarted(List(entry.task))))
            .flatMap(granted =>
              if granted.isLeft then next(poll, entry) else record.unstarted(entry).as(false)
            )

  /**
   * The key's chain, after a task: the next task parked behind its key (the key stays claimed by the
   * caller, which runs it next, from [[ready]] on); with `andTake`, once the key is released, the caller's
   * next task, taken from the buffer in the same step (see [[UnsafeTaskBuffer.tryFinishKey]]);
   * [[Released]] (no key, or nothing handed on or taken); or [[Later]] when the hand-on must wake a
   * producer ([[handOnLater]]). A plain call, inside an effect.
   */
  def handOn(entry: Entry[A], andTake: Boolean): Handout[A] =
    if entry.keyed then buffer.unsafe.tryFinishKey(entry.key, andTake) else Released

  /**
   * The key's hand-on as an effect: the next task parked behind `key`, or `None` (the key is released; or
   * the run stopped, and tasks parked behind the key stay in the buffer, to be returned as not started).
   */
  def handOnLater(key: Any): F[Option[Entry[A]]] = buffer.finishKey(key)

  // ---- attempt --------------------------------------------------------------------------------

  /**
   * Registers an attempt of `task`, or the wait before one, with its interruption, for an
   * [[weir.Interruptible]] task of a refusable source ([[UnsafeInterruptibleAttempt.register]], which asks the
   * task's refusal first when `asked`: a retry's attempt); otherwise
   * [[UnsafeInterruptibleAttempt.Unregistered]]. A plain call, made in the worker's `Attempting` step right before it
   * runs [[attempt]] inside its `poll`, so that an interruption cancels the attempt's own fiber.
   */
  def register(
      task: A,
      asked: Boolean,
      worker: UnsafeInterruptibleAttempt.Owner
  ): UnsafeInterruptibleAttempt.Registration =
    if refusable then
      task match
        case t: Interruptible => UnsafeInterruptibleAttempt.register(t, worker, asked)
        case _ => UnsafeInterruptibleAttempt.Unregistered
    else UnsafeInterruptibleAttempt.Unregistered

  /**
   * One try of `task`, and how it ended: the handler. Its timeout, if any, is the worker's, which arms the
   * attempt's deadline around it ([[DeadlineTimer]]) rather than racing it against a sleep.
   */
  def attempt(task: A): F[Either[Throwable, B]] = F.attempt(handle(task))

  /**
   * Whether a task whose attempt `n` failed with `error` is tried again; counts a timeout. A plain call, in
   * the worker's `Ended` step. An interrupted task was stopped on purpose and is not.
   */
  def retrying(error: Throwable, n: Int): Boolean =
    if once || error.isInstanceOf[TaskInterrupted] then false
    else
      if error.isInstanceOf[TaskTimedOut] then ledger.timedOut()
      n < retries.maxAttempts && retries.retryable(error)

  /**
   * The wait before attempt `n + 1` of `task`, which [[retrying]] allowed: its backoff, then a rate-limit
   * permit; counted retried once it is over. Cancelable (through `poll`); a cancellation there is the
   * worker's to record, the task having started. An [[weir.Interruptible]] task of a refusable source waits
   * against its interruption, as its attempts run ([[register]]): one told to stop before the wait skips
   * it, and the next attempt's refusal ends it.
   */
  def backoff(poll: Poll[F], task: A, n: Int, worker: UnsafeInterruptibleAttempt.Owner): F[Unit] =
    val wait = delay(n).flatMap(d => F.sleep(d) *> retryPermit)
    val waited =
      register(task, asked = false, worker) match
        case UnsafeInterruptibleAttempt.Unregistered => poll(wait)
        case registration: UnsafeInterruptibleAttempt =>
          poll(wait.flatMap(_ => if registration.ended() then F.unit else F.never))
        case UnsafeInterruptibleAttempt.Refused(_) => F.unit
    waited *> F.delay(ledger.retried())

  /** A retry's permit (the first attempt's was granted by [[permit]]). */
  private val retryPermit: F[Unit] = settings.rateLimit.fold(F.unit)(waitedFor)

  /** A permit from `limiter`, counted rate-limited when it was not granted at once. */
  private def waitedFor(limiter: RateLimiter[F]): F[Unit] =
    limiter.acquireWaiting.flatMap(waited => if waited then F.delay(ledger.rateLimited()) else F.unit)

  private def delay(failed: Int): F[FiniteDuration] =
    F.delay(retries.backoff(failed, ThreadLocalRandom.current()))

  /**
   * The handler's effect for `task`; a handler that throws instead of returning a failed effect fails
   * that task like any other error (it would otherwise escape the worker and lose the task).
   */
  private def handle(task: A): F[B] =
    try settings.handler(task)
    catch case NonFatal(e) => F.raiseError(e)

private[weir] object TaskPath:

  /**
   * The stages in front of the attempt, given the worker's `poll` and the task taken: true when the task
   * may start, false when it was recorded.
   */
  type Front[F[_], A] = (Poll[F], Entry[A]) => F[Boolean]
