package weir.internal

import cats.effect.kernel.Async
import weir.{Interruptible, TaskInterrupted}

import java.util.concurrent.atomic.AtomicInteger

/**
 * One attempt of an [[Interruptible]] task, or its wait for a retry, run on its worker's own fiber. The
 * task's interruption cancels that fiber ([[WorkerPool.interrupt]]); the worker's finalizer records the task interrupted, and the pool
 * starts a worker in its place that goes on from that task (its key's next task, then any): a running
 * task is stopped by Cats Effect's cancellation of the fiber it runs on, where a fiber of its own per
 * attempt would cost a fiber's start and a wake-up of the waiting worker on every attempt, interrupted or
 * not.
 *
 * The race it settles, by compare-and-set on its state, is the handler's end against the interruption:
 * whichever comes first decides. The end first: the registration is undone and the attempt's result
 * stands. The interruption first: the worker's fiber is to be cancelled, and the worker, if its handler
 * ends meanwhile, waits for that cancellation inside the attempt ([[ended]] is false), so that a
 * cancellation can only ever land on the attempt it was meant for. An interruption during the registration
 * (the task was told to stop before) refuses the attempt, which never starts.
 *
 * The task calls this object (it is the `interrupt` function registered) at most once, from any thread.
 */
private[weir] final class InterruptibleAttempt(interruptWorker: () => Unit)
    extends AtomicInteger(InterruptibleAttempt.Registering),
      (String => Unit):
  import InterruptibleAttempt.*

  // written before the compare-and-set that publishes the interruption, read only after seeing it
  @volatile private var why: String = scala.compiletime.uninitialized
  private var unregister: () => Unit = scala.compiletime.uninitialized

  /**
   * Registers with `task` and starts the attempt; the reason, if the task was told to stop before (the
   * attempt must not run). Called by the worker's fiber, once.
   */
  def start(task: Interruptible): Option[String] =
    unregister = task.onInterrupt(this)
    if compareAndSet(Registering, Running) then None else Some(why)

  /** The task's interruption: cancels the worker's fiber if the attempt runs and has not ended. */
  def apply(reason: String): Unit =
    why = reason
    if !compareAndSet(Registering, Refused) && compareAndSet(Running, Interrupted) then interruptWorker()

  /**
   * The handler ended: true if that came first (the registration is undone); false if the interruption did
   * (the worker's cancellation is under way, and the worker must wait for it). Called by the worker's fiber.
   */
  def ended(): Boolean =
    if compareAndSet(Running, Ended) then
      unregister()
      true
    else false

  /**
   * The worker's fiber was cancelled during this attempt: the interruption's reason if the interruption did
   * it; none if something else did (the run stopping), and the registration is then undone. Called by the
   * worker's finalizer.
   */
  def cancelled(): Option[String] =
    if compareAndSet(Running, Ended) then
      unregister()
      None
    else if get == Interrupted then Some(why)
    else None

private[weir] object InterruptibleAttempt:
  private val Registering = 0
  private val Running = 1
  private val Ended = 2
  private val Interrupted = 3
  private val Refused = 4

  /** The worker an attempt runs on, as the attempt's path sees it ([[TaskPath.attempt]]). */
  trait Owner:
    /** The interruptible attempt now running on this worker's fiber. */
    def attempting(attempt: InterruptibleAttempt): Unit

    /** Has this worker's fiber cancelled, for an interruption ([[WorkerPool.interrupt]]); any thread. */
    def interrupt: () => Unit

  /**
   * Attempt `n` of `task`, `run`, against the task's interruption: `run` runs on the worker's own fiber,
   * and an interruption cancels that fiber, whose finalizer records the task interrupted once `run`'s
   * finalizers have run ([[Worker]]). A retry (`n` > 1) first asks the task's refusal, and one that refuses
   * fails with [[weir.TaskInterrupted]] without running; so does an attempt whose task was told to stop
   * before it registered. The first attempt's refusal was asked just before its start
   * ([[TaskPath.ready]], [[TaskPath.enter]]), and asking again here would fail, uncounted as a refusal, an
   * attempt that never ran.
   */
  def attempt[F[_], B](task: Interruptible, n: Int, worker: Owner)(run: => F[B])(using
      F: Async[F]
  ): F[Either[Throwable, B]] =
    (if n > 1 then task.tryStart() else None) match
      case Some(reason) => F.pure(Left(new TaskInterrupted(reason)))
      case None =>
        registered(task, worker, reason => F.pure(Left(new TaskInterrupted(reason))))(F.attempt(run))

  /**
   * `run` (an attempt, or a retry's wait) registered with `task`'s interruption on `worker`'s fiber, to be
   * run inside the worker's `poll`: an interruption cancels that fiber, and a task told to stop before the
   * registration gets `refused(reason)` without running `run`. The registration and the worker's note of it
   * are one plain step, so a cancellation finds either neither or both.
   */
  def registered[F[_], X](task: Interruptible, worker: Owner, refused: String => F[X])(run: => F[X])(using
      F: Async[F]
  ): F[X] =
    F.defer {
      val registration = new InterruptibleAttempt(worker.interrupt)
      registration.start(task) match
        case Some(reason) => refused(reason)
        case None =>
          worker.attempting(registration)
          // interrupted before its end: the worker's cancellation is under way, and it lands here, in `poll`
          F.flatMap(run)(x => if registration.ended() then F.pure(x) else F.never)
    }
