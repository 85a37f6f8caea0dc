package weir.internal

import cats.effect.kernel.{Concurrent, Deferred, Poll, Ref}
import cats.effect.syntax.all.*
import cats.syntax.all.*

import scala.collection.immutable.SortedMap

/**
 * The reorder window of [[weir.Ordering.inputOrder]]: a task at input position `p` may start only when
 * `p < prefix + window`, where `prefix` is the position of the oldest task not yet finished. This bounds
 * the outcomes a consumer must hold back to emit in order to `window`.
 */
private[weir] final class OrderWindow[F[_]] private (window: Int, state: Ref[F, OrderWindow.State[F]])(using
    F: Concurrent[F]
):

  /** Waits until position `seq` may start. Only the wait is cancelable (through `poll`). */
  def admit(poll: Poll[F], seq: Long): F[Unit] =
    state.get.flatMap { s =>
      if seq < s.prefix + window then F.unit
      else
        F.deferred[Unit].flatMap { d =>
          state.modify { s =>
            if seq < s.prefix + window then (s, F.unit)
            else
              val waiters = s.waiters.updated(seq, d :: s.waiters.getOrElse(seq, Nil))
              (s.copy(waiters = waiters), poll(d.get).onCancel(forget(seq, d)))
          }.flatten
        }
    }

  /** Marks position `seq` finished, sliding the window and waking whoever it now admits. */
  def finished(seq: Long): F[Unit] =
    state.modify { s =>
      // the common case: the oldest task finished and nothing after it is done or waiting
      if seq == s.prefix && s.done.isEmpty && s.waiters.isEmpty then (s.copy(prefix = seq + 1), F.unit)
      else s.slide(seq, window)
    }.flatten

  private def forget(seq: Long, d: Deferred[F, Unit]): F[Unit] =
    state.update { s =>
      val rest = s.waiters.getOrElse(seq, Nil).filterNot(_ eq d)
      s.copy(waiters = if rest.isEmpty then s.waiters - seq else s.waiters.updated(seq, rest))
    }

private[weir] object OrderWindow:
  /* Invariant: every position < prefix is finished; `done` holds the finished positions >= prefix. */
  final case class State[F[_]](
      prefix: Long,
      done: Set[Long],
      waiters: SortedMap[Long, List[Deferred[F, Unit]]]
  )(using F: Concurrent[F]):

    /** Marks `seq` finished, slides the prefix over finished positions and wakes whom it now admits. */
    def slide(seq: Long, window: Int): (State[F], F[Unit]) =
      var prefix = this.prefix
      var done = this.done + seq
      while done.contains(prefix) do
        done -= prefix
        prefix += 1
      if waiters.isEmpty || waiters.firstKey >= prefix + window then (State(prefix, done, waiters), F.unit)
      else
        val (admitted, waiting) = waiters.span { case (p, _) => p < prefix + window }
        (State(prefix, done, waiting), admitted.valuesIterator.flatten.toList.traverse_(_.complete(()).void))

  def apply[F[_]: Concurrent](window: Int): F[OrderWindow[F]] =
    Ref.of[F, State[F]](State(0L, Set.empty, SortedMap.empty)).map(new OrderWindow(window, _))
