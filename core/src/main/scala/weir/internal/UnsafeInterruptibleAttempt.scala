package weir.internal

import weir.Interruptible

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
private[weir] final class UnsafeInterruptibleAttempt(interruptWorker: () => Unit)
    extends AtomicInteger(UnsafeInterruptibleAttempt.Phase.Registering),
      UnsafeInterruptibleAttempt.Registration,
      (String => Unit):
  import UnsafeInterruptibleAttempt.*

  // written before the compare-and-set that publishes the interruption, read only after seeing it
  @volatile private var why: String = scala.compiletime.uninitialized
  private var unregister: () => Unit = scala.compiletime.uninitialized

  /**
   * Registers with `task` and starts the attempt; the reason, if the task was told to stop before (the
   * attempt must not run). Called by the worker's fiber, once.
   */
  def start(task: Interruptible): Option[String] =
    unregister = task.onInterrupt(this)
    if compareAndSet(Phase.Registering, Phase.Running) then None else Some(why)

  /** The task's interruption: cancels the worker's fiber if the attempt runs and has not ended. */
  def apply(reason: String): Unit =
    why = reason
    if !compareAndSet(Phase.Registering, Phase.Refused) && compareAndSet(Phase.Running, Phase.Interrupted)
    then interruptWorker()

  /**
   * The handler ended: true if that came first (the registration is undone); false if the interruption did
   * (the worker's cancellation is under way, and the worker must wait for it). Called by the worker's fiber.
   */
  def ended(): Boolean =
    if compareAndSet(Phase.Running, Phase.Ended) then
      unregister()
      true
    else false

  /**
   * The worker's fiber was cancelled during this attempt: the interruption's reason if the interruption did
   * it; none if something else did (the run stopping), and the registration is then undone. Called by the
   * worker's finalizer.
   */
  def cancelled(): Option[String] =
    if compareAndSet(Phase.Running, Phase.Ended) then
      unregister()
      None
    else if get == Phase.Interrupted then Some(why)
    else None

private[weir] object UnsafeInterruptibleAttempt:
  // the phases of its state, an int so that the state is the attempt itself (one allocation per attempt)
  private[UnsafeInterruptibleAttempt] object Phase:
    val Registering = 0
    val Running = 1
    val Ended = 2
    val Interrupted = 3
    val Refused = 4

  /** The worker an attempt runs on, as the attempt's path sees it ([[TaskPath.register]]). */
  trait Owner:
    /** The interruptible attempt now running on this worker's fiber. */
    def attempting(attempt: UnsafeInterruptibleAttempt): Unit

    /** Has this worker's fiber cancelled, for an interruption ([[WorkerPool.interrupt]]); any thread. */
    def interrupt: () => Unit

  /**
   * What registering an attempt, or a retry's wait, with its task's interruption gave: [[Unregistered]] (the
   * task cannot be interrupted), the [[UnsafeInterruptibleAttempt]] now registered (noted on its worker), or
   * [[Refused]] (the task was told to stop before: what was to be registered must not run). No allocation but
   * the attempt's own, and the refusal's.
   */
  sealed trait Registration

  /** Nothing registered: the task is not an [[Interruptible]] of a refusable source. */
  case object Unregistered extends Registration

  /** The task was told to stop, for `reason`, before the registration: the attempt must not run. */
  final case class Refused(reason: String) extends Registration

  /**
   * Registers attempt `n` of `task`, or the wait before it, with the task's interruption on `worker`'s fiber,
   * as one plain step, to be made in the worker's `Attempting` step right before it runs the attempt inside its
   * `poll`: an interruption then cancels that fiber, whose finalizer records the task interrupted once the
   * attempt's finalizers have run ([[Worker]]). The registration and the worker's note of it are one plain
   * step, so a cancellation finds either neither or both. Once what was registered has ended, the worker asks
   * [[UnsafeInterruptibleAttempt.ended]]: false means the interruption came first, and its cancellation lands while
   * the worker waits for it, so that it can only ever land on the attempt it was meant for.
   *
   * `asked`: whether to ask the task's refusal first. A retry (`n` > 1) asks, and one that refuses fails with
   * [[weir.TaskInterrupted]] without running; the first attempt's refusal was asked just before its start
   * ([[TaskPath.ready]], [[TaskPath.enter]]), and asking again would fail, uncounted as a refusal, an attempt
   * that never ran; a retry's wait does not ask (its attempt will).
   */
  def register(task: Interruptible, worker: Owner, asked: Boolean): Registration =
    (if asked then task.tryStart() else None) match
      case Some(reason) => Refused(reason)
      case None =>
        val registration = new UnsafeInterruptibleAttempt(worker.interrupt)
        registration.start(task) match
          case Some(reason) => Refused(reason)
          case None =>
            worker.attempting(registration)
            registration
