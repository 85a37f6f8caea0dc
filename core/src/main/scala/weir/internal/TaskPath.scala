package weir.internal

import cats.effect.kernel.{Async, Deferred, Poll}
import cats.effect.syntax.all.*
import cats.syntax.all.*
import weir.*

import java.util.concurrent.ThreadLocalRandom
import scala.concurrent.duration.*
import scala.util.control.NonFatal

/**
 * What happens to a task once a worker took it from the buffer: a chain of stages, composed once from the
 * settings when the run starts.
 *
 * {{{
 * admit (reorder window | key)  →  permit (rate limiter)  →  attempt (timeout, retry)  →  record
 * }}}
 *
 * A stage a run does not use is absent from the chain (`admit` and `permit` are then the next stage
 * itself, `attempt` is one plain try), so a run pays only for what its settings ask for. Each stage
 * records what a cancellation or a stop leaves behind at the place it waits, so that every task taken
 * ends in the [[Recorder]] or as not started, exactly once.
 *
 * Every stage runs inside the worker's `uncancelable` life and wraps only its waits and the handler in
 * `poll`.
 */
private[weir] final class TaskPath[F[_], A, B](
    settings: Settings[F, A, B],
    val buffer: TaskBuffer[F, A],
    val ledger: Ledger[A],
    val window: Option[OrderWindow[F]],
    val record: Recorder[F, A, B],
    stopRequest: Deferred[F, Stop.Request]
)(using F: Async[F]):
  import TaskPath.Stage

  private val retry = settings.retry

  /** The chain, composed once. */
  val run: Stage[F, A] = admit(permit(attempt))

  /**
   * Whether the chain's middle is empty — no rate limit, no retry, no timeout — so that a task, once
   * admitted, is one plain try of the handler. The worker then runs it fused into its own loop (the same
   * chain, written as plain steps: see [[Worker]]).
   */
  val lean: Boolean = retry.maxAttempts == 1 && settings.taskTimeout.isEmpty && settings.rateLimit.isEmpty

  /**
   * Whether `entry` takes the lean way: the path is [[lean]], the entry is admitted now (a plain read, to be
   * made inside an effect), and its key did not fail.
   */
  def leanFor(entry: Entry[A]): Boolean =
    lean && !entry.key.isInstanceOf[KeyFailure] &&
      (window match
        case Some(w) => w.admitted(entry.seq)
        case None => true)

  /**
   * The handler's effect for `task`; a handler that throws instead of returning a failed effect fails
   * that task like any other error (it would otherwise escape the worker and lose the task).
   */
  def handle(task: A): F[B] =
    try settings.handler(task)
    catch case NonFatal(e) => F.raiseError(e)

  // ---- admit ----------------------------------------------------------------------------------

  /** In input order, the reorder window's admission; per key, the key's chain; otherwise nothing. */
  private def admit(next: Stage[F, A]): Stage[F, A] =
    window match
      case Some(w) =>
        (poll, entry) =>
          // a task admitted after the run began to stop must not start: it goes back as not started
          w.admit(poll, entry.seq).onCancel(F.delay(ledger.notStarted(List(entry.task)))) *>
            buffer.isStopped.ifM(record.unstarted(entry), next(poll, entry))
      case None =>
        settings.order match
          case TaskOrder.ByKey(_) => (poll, entry) => keyed(next, poll, entry)
          case _ => next

  private def keyed(next: Stage[F, A], poll: Poll[F], entry: Entry[A]): F[Unit] =
    entry.key match
      case null => next(poll, entry) // the key function returned null: no key to wait for
      case failure: KeyFailure => // the key function is part of handling the task
        F.delay(ledger.started()) *> record.failed(entry, failure.error, Duration.Zero, 1)
      case key => keyChain(next, poll, key, entry)

  /** Runs `entry`, whose key it claimed, then the tasks parked behind that key, one by one. */
  private def keyChain(next: Stage[F, A], poll: Poll[F], key: Any, entry: Entry[A]): F[Unit] =
    // once the run stops, tasks parked behind the key stay in the buffer and are returned as not started
    next(poll, entry) *> buffer.finishKey(key).flatMap(_.fold(F.unit)(keyChain(next, poll, key, _)))

  // ---- permit ---------------------------------------------------------------------------------

  /** Waits for the rate limiter's permit, if there is a limiter; a stop while it waits wins. */
  private def permit(next: Stage[F, A]): Stage[F, A] =
    settings.rateLimit match
      case None => next
      case Some(limiter) =>
        (poll, entry) =>
          poll(F.race(limiter.acquire, stopRequest.get))
            .onCancel(F.delay(ledger.notStarted(List(entry.task))))
            .flatMap(granted => if granted.isLeft then next(poll, entry) else record.unstarted(entry))

  /** A retry's permit (the first attempt's was granted by [[permit]]). */
  private val retryPermit: F[Unit] = settings.rateLimit.fold(F.unit)(_.acquire)

  // ---- attempt --------------------------------------------------------------------------------

  /** Starts the task and runs its attempts: one plain try, or with a timeout and retries. */
  private def attempt: Stage[F, A] =
    if retry.maxAttempts == 1 && settings.taskTimeout.isEmpty then
      (poll, entry) =>
        F.delay(ledger.started()) *> F.monotonic.flatMap { t0 =>
          poll(handle(entry.task))
            .onCancel(F.monotonic.flatMap(t1 => record.interrupted(entry, t1 - t0, 1)))
            .redeemWith(
              error => F.monotonic.flatMap(t1 => record.failed(entry, error, t1 - t0, 1)),
              value => F.monotonic.flatMap(t1 => record.succeeded(entry, value, t1 - t0, 1))
            )
        }
    else (poll, entry) => F.delay(ledger.started()) *> F.monotonic.flatMap(t0 => attempts(poll, entry, t0, 1))

  /** Attempt number `n` of a task started at `t0`; a retry's backoff is waited out in the same slot. */
  private def attempts(poll: Poll[F], entry: Entry[A], t0: FiniteDuration, n: Int): F[Unit] =
    val onCancel = F.monotonic.flatMap(t1 => record.interrupted(entry, t1 - t0, n))
    poll(timed(handle(entry.task)))
      .onCancel(onCancel)
      .redeemWith(
        error =>
          F.delay(ledger.timedOut()).whenA(error.isInstanceOf[TaskTimedOut]) *> {
            if n < retry.maxAttempts && retry.retryable(error) then
              backoff(n).flatMap(d => poll(F.sleep(d) *> retryPermit).onCancel(onCancel)) *>
                F.delay(ledger.retried()) *>
                attempts(poll, entry, t0, n + 1)
            else F.monotonic.flatMap(t1 => record.failed(entry, error, t1 - t0, n))
          },
        value => F.monotonic.flatMap(t1 => record.succeeded(entry, value, t1 - t0, n))
      )

  private def timed(attempt: F[B]): F[B] =
    settings.taskTimeout match
      case Some(limit) => F.timeoutTo(attempt, limit, F.raiseError(new TaskTimedOut(limit)))
      case None => attempt

  private def backoff(failed: Int): F[FiniteDuration] =
    F.delay(retry.backoff(failed, ThreadLocalRandom.current()))

private[weir] object TaskPath:
  /** One stage of a task's path, given the worker's `poll` and the task taken. */
  type Stage[F[_], A] = (Poll[F], Entry[A]) => F[Unit]
