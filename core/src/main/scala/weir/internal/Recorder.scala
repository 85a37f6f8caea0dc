package weir.internal

import cats.effect.kernel.{Async, Deferred}
import cats.syntax.all.*
import weir.*

import scala.concurrent.duration.*

/**
 * The record stage, the last of a task's path ([[TaskPath]]): how a task ended goes to the [[Ledger]], to
 * the reorder window (its place is freed), to the outcome stream if there is one, and through the failure
 * policy. Every task that started is recorded here exactly once: succeeded, failed, or interrupted.
 *
 * A success is a plain step ([[succeeded]]) that returns what is left to do as an effect, so that the
 * worker records it in its own continuation; the other records, rarer and bound to the failure policy or
 * a cancellation, are effects.
 */
private[weir] final class Recorder[F[_], A, B](
    policy: FailurePolicy[F, A],
    emit: Option[Outcomes[F, A, B]],
    ledger: Ledger[A],
    window: Option[OrderWindow[F]],
    stopRequest: Deferred[F, RunEnd.Request],
    requestStop: (StopReason, FiniteDuration) => F[Boolean]
)(using F: Async[F]):

  /**
   * The record of a success, as a plain step: counted, its latency recorded, its place in the reorder
   * window freed, its outcome written to the stream if there is one and it has room. Returns the rest as an
   * effect — waking the admissions the window now lets in, waiting for room in the stream — or `None` when
   * nothing is left (the common case). A plain call, to be made in a continuation that runs what it returns.
   */
  def succeeded(entry: Entry[A], value: B, latencyNanos: Long, attempts: Int): Option[F[Unit]] =
    ledger.succeeded(latencyNanos)
    val woken = window match
      case Some(w) => w.finished(entry.seq)
      case None => None
    emit match
      case None => woken
      case Some(out) =>
        // written as a plain step when the channel has room: an effect only when it is full
        val outcome = TaskOutcome.Succeeded(entry.task, value, attempts)
        if out.trySend(entry.seq, outcome) then woken
        else
          val published = out.send(entry.seq, outcome)
          Some(woken.fold(published)(_ *> published))

  def failed(entry: Entry[A], error: Throwable, latency: FiniteDuration, attempts: Int): F[Unit] =
    def record(disposition: Disposition): F[Unit] =
      val outcome = new TaskOutcome.Failed(entry.task, error, disposition, attempts)
      F.delay(ledger.failed(outcome, latency.toNanos)) *> finished(entry) *> publish(entry.seq, outcome)
    if error.isInstanceOf[TaskInterrupted] then record(Disposition.Interrupted) // stopped on purpose
    else
      policy match
        case FailurePolicy.FailFast() =>
          // the first failure stops the run; one that lands while it is stopping is only recorded
          requestStop(StopReason.FailedFast(error), Duration.Zero)
            .flatMap(first => record(if first then Disposition.Aborted else Disposition.Skipped))
        case FailurePolicy.Skip() => record(Disposition.Skipped)
        case FailurePolicy.DeadLetter(sink) =>
          // the sink runs uncancelably in this slot: a task handed to it is recorded as dead-lettered or not
          sink(entry.task, error).attempt.flatMap {
            case Right(_) => record(Disposition.DeadLettered)
            case Left(sinkError) => F.delay(error.addSuppressed(sinkError)) *>
                record(Disposition.DeadLetterFailed)
          }

  /** A task cancelled while it ran (the run stopped, or was cancelled). */
  def interrupted(entry: Entry[A], latency: FiniteDuration, attempts: Int): F[Unit] =
    stopRequest.tryGet.flatMap { request =>
      val why = request.fold("the run was cancelled")(r => s"the run stopped (${r.reason})")
      val outcome =
        new TaskOutcome.Failed(entry.task, new TaskInterrupted(why), Disposition.Interrupted, attempts)
      F.delay(ledger.failed(outcome, latency.toNanos)) *> finished(entry) *> publish(entry.seq, outcome)
    }

  /** A task that refused to start ([[weir.Refusable]]): counted, and its outcome published now. */
  def refused(entry: Entry[A], reason: String): F[Unit] =
    F.delay(ledger.refused()) *> finished(entry) *>
      publish(entry.seq, TaskOutcome.NotStarted(entry.task, NotStartedReason.Refused(reason)))

  /** A task taken from the buffer that will not start (the run is stopping): returned as not started. */
  def unstarted(entry: Entry[A]): F[Unit] =
    F.delay(ledger.notStarted(List(entry.task))) *> finished(entry) // frees its place in the reorder window

  /**
   * Hands an outcome to the consumer, if there is one (the outcome is not even built otherwise). Not
   * cancelable: an outcome recorded in the ledger always reaches the stream too, so a consumer that stops
   * reading can hold up a drain's deadline (releasing the stream closes the channel and frees it).
   */
  def publish(position: Long, outcome: => TaskOutcome[A, B]): F[Unit] =
    emit match
      case Some(out) => out.send(position, outcome)
      case None => F.unit

  private def finished(entry: Entry[A]): F[Unit] =
    window.fold(F.unit)(w => F.defer(w.finished(entry.seq).getOrElse(F.unit)))
