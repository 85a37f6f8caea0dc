package weir.internal

import cats.effect.kernel.{Async, Deferred}
import cats.syntax.all.*
import weir.{NotStartedReason, StopReason}

import scala.concurrent.duration.FiniteDuration

/**
 * How a run is asked to stop (a drain, a fail-fast, a release): the buffer stops handing out tasks at
 * once, so nothing starts from then on, and the first request is kept; `onRequest` runs once, after it is
 * kept, to end the run (the [[Engine]]'s conductor shuts it down within the request's deadline). Later
 * requests change nothing.
 */
private[weir] final class Stop[F[_]: Async](
    buffer: TaskBuffer[F, ?],
    val requested: Deferred[F, Stop.Request],
    onRequest: F[Unit]
):

  /**
   * True for the request that won (the first). Not cancelable: a request kept whose `onRequest` never ran would
   * leave the run without an end.
   */
  def request(reason: StopReason, deadline: FiniteDuration): F[Boolean] =
    Async[F].uncancelable(_ =>
      buffer.stop *>
        requested.complete(Stop.Request(reason, deadline)).flatTap(first => onRequest.whenA(first))
    )

private[weir] object Stop:

  final case class Request(reason: StopReason, deadline: FiniteDuration)

  /**
   * Why the run ended: a fail-fast wins over everything; else a failed source (the first, with the others
   * suppressed on it) over a drain or a release; else the request; else the run completed.
   */
  def reason(requested: Option[StopReason], sourceErrors: List[Throwable]): StopReason =
    val sourceFailed = sourceErrors.reverse match
      case Nil => None
      case first :: more =>
        more.foreach(first.addSuppressed)
        Some(StopReason.SourceFailed(first))
    requested match
      case Some(f: StopReason.FailedFast) => f
      case other => sourceFailed.orElse(other).getOrElse(StopReason.Completed)

  /** What the tasks that never started are told, by why the run ended. */
  def notStartedReason(stop: StopReason): NotStartedReason = stop match
    case StopReason.FailedFast(_) => NotStartedReason.FailedFast
    case StopReason.Drained => NotStartedReason.Drained
    case _ => NotStartedReason.Released
