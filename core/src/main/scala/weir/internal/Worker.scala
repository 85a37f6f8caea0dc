package weir.internal

import cats.effect.kernel.{Async, Poll}
import cats.effect.syntax.all.*
import cats.syntax.all.*

import scala.concurrent.duration.*

/**
 * One worker of a run: takes a task, runs it through the run's [[TaskPath]], again, until the buffer is
 * finished (`life` ends with false) or the pool has too many workers (true: it retired).
 *
 * Its whole life is masked: it can be cancelled only where it waits (a take, a stage's wait) or runs a
 * handler, all inside `poll`, and each of those places records what a cancellation leaves behind.
 *
 * ==The lean way==
 * When the path is lean (no permit, one plain attempt: [[TaskPath.lean]]) and the task is admitted at
 * once, the worker runs the same chain written as plain steps of its own loop: the take, the retire
 * check, the started and succeeded counters, the latency record, the window's mark and the key's hand-on
 * are plain calls fused into the continuations of the handler and of one clock reading, which also serves
 * as the next task's start. Its continuations are built once per worker, and one finalizer for the
 * worker's life (it reads `current`) replaces a finalizer per task. Whatever needs an effect — a wait, a
 * producer or an admission to wake, an outcome to publish, a failure — goes through the path's effectful
 * stages and the [[Recorder]]. The mutable fields are confined to this worker's fiber: its continuations
 * and delays, which write and read them, run one after another.
 */
private[weir] final class Worker[F[_], A, B](
    path: TaskPath[F, A, B],
    pool: WorkerPool[F],
    poll: Poll[F]
)(using
    F: Async[F]
):
  import path.{buffer, ledger, record, window}

  private var current: Entry[A] = null // the lean task running now; null between lean tasks
  private var t0 = 0L // when it started (monotonic nanoseconds)
  private var result: Either[Throwable, B] = Left(null) // how it ended, between `ended` and `recorded`

  private val silent = !record.publishes

  /** The fast take, as one plain step; [[TakeLater]]: retire or take the slow way. */
  private def next(): Took[A] =
    if pool.overLimit then TakeLater
    else
      buffer.unsafe.tryTake() match
        case entry: Entry[A] =>
          if path.leanFor(entry) then claim(entry)
          entry
        case TakeLater => TakeLater

  /** A lean task starts as it is taken: counted started and held in `current` for the finalizer. */
  private def claim(entry: Entry[A]): Unit =
    ledger.started()
    current = entry

  private val dispatch: Took[A] => F[Boolean] = {
    case TakeLater => slowTake
    case entry: Entry[A] =>
      if current ne null then F.monotonic.flatMap(started) // claimed by `next`
      else path.run(poll, entry).flatMap(_ => loop)
  }

  private val started: FiniteDuration => F[Boolean] = at =>
    t0 = at.toNanos
    attempt(current)

  /** Runs the lean task `entry` (already counted started, `t0` set), then [[ended]]. */
  private def attempt(entry: Entry[A]): F[Boolean] =
    poll(path.handle(entry.task)).attempt.flatMap(ended)

  private val ended: Either[Throwable, B] => F[Boolean] = r =>
    result = r
    clockThenRecorded

  /*
   * After a lean task: one clock reading serves as its end and, when the next task can be taken at once,
   * as that task's start. The success is counted and the next task taken right here in the continuation,
   * not in a further `F.delay`: the continuation runs once, in this worker's fiber, when the clock reading
   * arrives, which is all a delay would guarantee.
   */
  private val recorded: FiniteDuration => F[Boolean] = at =>
    val entry = current
    val now = at.toNanos
    val latency = now - t0
    current = null
    result match
      case Right(_) if silent =>
        ledger.succeeded(latency)
        carryOn(entry, now)
      case Right(value) => record.succeeded(entry, value, latency.nanos, 1).flatMap(_ => after(entry))
      case Left(error) => record.failed(entry, error, latency.nanos, 1).flatMap(_ => after(entry))

  /**
   * After a lean success with nothing to publish, as plain steps: mark the reorder window, hand the key on
   * to the task parked behind it, take the next task. Only a step that must wake someone (admissions the
   * window lets in, a producer waiting for the place a handed-on task frees) goes the effectful way.
   */
  private def carryOn(entry: Entry[A], now: Long): F[Boolean] =
    val woken = window match
      case Some(w) => w.finished(entry.seq)
      case None => None
    woken match
      case Some(wake) => wake.flatMap(_ => loop)
      case None =>
        if entry.key == null then proceed(next(), now)
        else
          buffer.unsafe.tryFinishKey(entry.key) match
            case following: Entry[A] => // the key's next task, already claimed for this worker
              claim(following)
              proceed(following, now)
            case KeyReleased => proceed(next(), now)
            case KeyTurnLater => afterKey(entry.key)

  /** Goes on with `following` (taken, or [[TakeLater]]) from the clock reading `now`. */
  private def proceed(following: Took[A], now: Long): F[Boolean] =
    following match
      case TakeLater => slowTake
      case entry: Entry[A] =>
        if current ne null then // claimed: a lean task
          t0 = now
          attempt(entry)
        else path.run(poll, entry).flatMap(_ => loop)

  /** After a lean task that took a slower way to its end: the key's next task, or any. */
  private def after(entry: Entry[A]): F[Boolean] =
    if entry.key == null then loop else afterKey(entry.key)

  /** The key's next task (claimed for this worker), or any task once the key is released. */
  private def afterKey(key: Any): F[Boolean] =
    buffer.finishKey(key).flatMap {
      case Some(following) =>
        F.monotonic.flatMap { at =>
          claim(following)
          started(at)
        }
      case None => loop
    }

  // built once per worker, after the continuations they use
  private val clockThenRecorded: F[Boolean] = F.monotonic.flatMap(recorded)
  private val loop: F[Boolean] = F.delay(next()).flatMap(dispatch)

  def life: F[Boolean] = loop.onCancel(F.defer(interrupted))

  /** Retires if the pool is over its limit; otherwise takes a task, waiting for one if need be. */
  private def slowTake: F[Boolean] =
    pool.tryRetire.flatMap { retired =>
      if retired then F.pure(true)
      else
        buffer.take(poll).flatMap {
          case Some(entry) =>
            if path.leanFor(entry) then
              F.monotonic.flatMap { at =>
                claim(entry) // in the continuation, like `recorded`'s bookkeeping
                started(at)
              }
            else path.run(poll, entry).flatMap(_ => loop)
          case None => buffer.isFinished.flatMap(done => if done then F.pure(false) else loop)
        }
    }

  /** What a cancelled worker leaves: the lean task it was running, if any, is recorded interrupted. */
  private def interrupted: F[Unit] =
    val entry = current
    if entry eq null then F.unit
    else
      current = null
      F.monotonic.flatMap(at => record.interrupted(entry, (at.toNanos - t0).nanos, 1))
