package weir.internal

import cats.effect.kernel.{Async, Poll}
import cats.syntax.all.*
import weir.internal.UnsafeDeadline.Look

import scala.concurrent.duration.*

/**
 * The task timeout of one worker's attempts, without a race per attempt: the worker arms its deadline
 * ([[UnsafeDeadline]]) as an attempt starts and disarms it as the attempt ends, plain calls, and one standby
 * per worker, a worker of the pool started uncounted ([[WorkerPool.standby]]), watches it ([[watch]]): it
 * sleeps until the deadline armed, parks while none is, and is woken by the worker only when the worker
 * arms a deadline while it is parked. An attempt that overruns is stopped as an interruption stops one
 * ([[UnsafeInterruptibleAttempt]]): by cancelling the worker's fiber, on which the handler runs.
 *
 * Why a standby rather than a replacement started once the worker is cancelled (as an interruption's is):
 * a timed-out attempt is not recorded by the cancelled worker, but goes on — it is retried, or recorded
 * failed with [[weir.TaskTimedOut]] — so whoever goes on with it owns a started task. The standby fires the
 * deadline, cancels the worker, waits for its finalizers, and goes on with the task the worker left it
 * ([[WorkerPool.Slot.successor]]) in the worker's place: the task passes from one fiber that runs to
 * another that runs, each with a finalizer that records it interrupted if the run kills it, where a
 * replacement cancelled before its fiber ever ran (a kill does that) would take it with it unrecorded. The
 * standby then starts a standby of its own.
 *
 * The deadline and an interruption may both cancel the same attempt; the worker's finalizer decides: the
 * interruption, if it came before the attempt's end, is recorded (the task is not retried), and the
 * standby, if it fired, then goes on after the task as the interruption's replacement would.
 */
private[weir] final class DeadlineTimer[F[_], R](val limit: FiniteDuration, pool: WorkerPool[F, R])(using
    F: Async[F]
):
  private val limitNanos = limit.toNanos
  private var standby: Option[WorkerPool.Slot[F, R]] = None // the worker's fiber only

  /** The deadline of this worker's attempts, which its standby watches. */
  val deadline = new UnsafeDeadline

  /** Starts this worker's standby, which starts from `watch`. Not cancelable. */
  def start(watch: R): F[Unit] = pool.standby(watch).map(started => standby = started)

  /** An attempt starts at `start` (monotonic nanoseconds): its deadline is armed. A plain call. */
  def arm(start: Long): Unit = deadline.arm(start + limitNanos)

  /** The attempt ended: true if that came first; false if the standby fired its deadline. A plain call. */
  def disarm(): Boolean = deadline.disarm()

  /**
   * The worker leaves, however: true, and its standby is cancelled, unless the standby fired the attempt
   * armed (false: it is cancelling this worker to take its place, so this worker must not wait for it).
   */
  def dismiss: F[Boolean] =
    F.defer {
      if !deadline.close() then F.pure(false)
      else
        // a standby not yet published was woken by the close if it parked, and leaves when it looks again
        standby.flatMap(_.fiber).fold(F.unit)(_.cancel).as(true)
    }

private[weir] object DeadlineTimer:

  /**
   * A standby whose watch fired relieves the worker in `of`: cancels it, waiting for its finalizers, which
   * leave the task ([[WorkerPool.Slot.successor]]), and counts the standby in `standby` in its stead.
   * Returns what the worker left. Not cancelable: a cancellation lands in the standby's next `poll`, once
   * the task is the standby's, and its finalizer records the task.
   */
  def relieve[F[_], R](pool: WorkerPool[F, R], of: WorkerPool.Slot[F, R], standby: WorkerPool.Slot[F, R])(
      using F: Async[F]
  ): F[R] =
    pool.fiberOf(of).flatMap(_.cancel) *> F.defer {
      standby.counted = true
      of.successor match
        case Some(left) => F.pure(left)
        case None => F.raiseError(new IllegalStateException("a relieved worker left its standby nothing"))
    }

  /**
   * A standby's watch of `deadline`: true once it fired (an attempt overran: the standby owns its end, and
   * must cancel the worker); false once the worker left. Cancelable in its waits only, through `poll`;
   * the deadline is fired outside them, so that a standby cancelled as it fires still takes the task.
   */
  def watch[F[_]](deadline: UnsafeDeadline, poll: Poll[F])(using F: Async[F]): F[Boolean] =
    val parked = poll(F.async[Unit](resume => F.delay { deadline.park(resume); Some(F.unit) }))
    def loop: F[Boolean] =
      F.monotonic.flatMap { now =>
        deadline.look(now.toNanos) match
          case Look.Sleep(nanos) => poll(F.sleep(nanos.nanos)) *> loop
          case Look.Park => parked *> loop
          case Look.Fired => F.pure(true)
          case Look.Closed => F.pure(false)
      }
    loop
