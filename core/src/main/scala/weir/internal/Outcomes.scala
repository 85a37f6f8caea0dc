package weir.internal

import cats.effect.kernel.Async
import fs2.Stream
import weir.{TaskOrder, TaskOutcome}

/**
 * The channel of a run's outcome stream ([[weir.Pipeline.startWithOutcomes]]), from the [[Recorder]] to the
 * stream's one reader, over an [[Inbox]]. Under [[TaskOrder.inputOrder]] each outcome travels with its
 * input position and the stream restores the order ([[Reorder]]); otherwise the outcome travels alone, so
 * that an unordered or per-key run allocates no pair, no boxed position and no mapped chunk per outcome.
 * A task returned unstarted at the run's end has no position: `Long.MaxValue`, which [[Reorder]] puts last.
 */
private[weir] sealed abstract class Outcomes[F[_], A, B]:

  /**
   * Writes the outcome of the task at input `position` if there is room (see [[Inbox.trySend]]); false, and
   * nothing written, when the channel is full. A plain call, to be made inside an effect.
   */
  def trySend(position: Long, outcome: TaskOutcome[A, B]): Boolean

  /** Writes the outcome of the task at input `position`, waiting while the channel is full. */
  def send(position: Long, outcome: TaskOutcome[A, B]): F[Unit]

  /** No more writes: the stream ends once it has read what was written ([[Inbox.close]]). */
  def close: F[Unit]

  /** The outcomes, in input order under [[TaskOrder.inputOrder]]; one reader only. */
  def stream: Stream[F, TaskOutcome[A, B]]

private[weir] object Outcomes:

  /** A channel for a run in `order`, at most `capacity` outcomes waiting. A plain call. */
  def unsafe[F[_]: Async, A, B](order: TaskOrder[A], capacity: Int): Outcomes[F, A, B] =
    order match
      case TaskOrder.InputOrder(_) => new Numbered(Inbox.unsafe(capacity))
      case TaskOrder.Unordered | TaskOrder.ByKey(_) => new Unnumbered(Inbox.unsafe(capacity))

  private final class Numbered[F[_], A, B](inbox: Inbox[F, (Long, TaskOutcome[A, B])])
      extends Outcomes[F, A, B]:
    def trySend(position: Long, outcome: TaskOutcome[A, B]): Boolean = inbox.trySend((position, outcome))
    def send(position: Long, outcome: TaskOutcome[A, B]): F[Unit] = inbox.send((position, outcome))
    def close: F[Unit] = inbox.close
    def stream: Stream[F, TaskOutcome[A, B]] = inbox.stream.through(Reorder[F, TaskOutcome[A, B]])

  private final class Unnumbered[F[_], A, B](inbox: Inbox[F, TaskOutcome[A, B]]) extends Outcomes[F, A, B]:
    def trySend(position: Long, outcome: TaskOutcome[A, B]): Boolean = inbox.trySend(outcome)
    def send(position: Long, outcome: TaskOutcome[A, B]): F[Unit] = inbox.send(outcome)
    def close: F[Unit] = inbox.close
    def stream: Stream[F, TaskOutcome[A, B]] = inbox.stream
