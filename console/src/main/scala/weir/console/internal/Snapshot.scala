package weir.console.internal

import cats.effect.kernel.{Deferred, Ref, Resource, Temporal}
import cats.effect.kernel.syntax.all.*
import cats.effect.std.Supervisor
import cats.syntax.all.*

import java.time.Instant
import scala.concurrent.duration.*

/**
 * The last reading of a value that is costly to read (the queues' counts over a big backlog), shared by
 * every request. The first [[get]] waits for a reading; after it, a `get` answers at once with the last
 * reading, and one that finds it due (`every` after the last reading ended, and no sooner than nine times
 * that reading's own duration after it) starts the next reading in the background. So however many
 * operators watch, at most one reading runs at a time and readings take at most a tenth of the time; a
 * reading shown is at most `every` plus the gap between two requests old, and says when it was taken.
 *
 * A reading that fails keeps the last one (the next is tried `every` later); when there is none yet, every
 * `get` waiting for it fails with its error and the next `get` reads again. A caller cancelled while it
 * waits does not cancel the reading, which the others may be waiting for; closing the resource cancels a
 * reading under way and fails its waiters.
 *
 * With `every` zero nothing is shared: each `get` reads, and waits.
 */
private[console] final class Snapshot[F[_], A] private (
    read: F[A],
    every: FiniteDuration,
    state: Ref[F, Snapshot.State[F, A]],
    supervisor: Supervisor[F]
)(using F: Temporal[F]):
  import Snapshot.*

  def get: F[Taken[A]] =
    if every == Duration.Zero then (F.realTimeInstant, read).mapN((at, a) => Taken(a, at))
    else shared

  // uncancelable between the state's change and the reading's start, so that a caller cancelled there
  // cannot leave a reading marked under way that never started; only the wait for it is cancelable
  private def shared: F[Taken[A]] =
    F.uncancelable { poll =>
      (F.deferred[Either[Throwable, Taken[A]]], F.monotonic).flatMapN { (next, now) =>
        state.modify {
          case State.Empty(Some(waiting)) => (State.Empty(Some(waiting)), poll(waiting.get.rethrow))
          case State.Empty(None) => (State.Empty(Some(next)), start(next) *> poll(next.get.rethrow))
          case State.Ready(last, due, false) if now >= due =>
            (State.Ready(last, due, true), start(next).as(last))
          case ready @ State.Ready(last, _, _) => (ready, F.pure(last))
        }.flatten
      }
    }

  private def start(into: Deferred[F, Either[Throwable, Taken[A]]]): F[Unit] =
    supervisor.supervise(reading(into)).void

  private def reading(into: Deferred[F, Either[Throwable, Taken[A]]]): F[Unit] =
    F.uncancelable { poll =>
      (F.realTimeInstant, F.monotonic).flatMapN { (at, began) =>
        poll(read).attempt.flatMap { result =>
          F.monotonic.flatMap { ended =>
            val due = ended + every.max((ended - began) * 9)
            state.update {
              case State.Ready(last, _, _) => State.Ready(result.fold(_ => last, Taken(_, at)), due, false)
              case State.Empty(_) =>
                result.fold(_ => State.Empty(None), a => State.Ready(Taken(a, at), due, false))
            } *> into.complete(result.map(Taken(_, at))).void
          }
        }.onCancel(
          state.update {
            case State.Ready(last, due, _) => State.Ready(last, due, false)
            case State.Empty(_) => State.Empty(None)
          } *> into.complete(Left(new IllegalStateException("the console is closing"))).void
        )
      }
    }

private[console] object Snapshot:

  /** A reading and when it began. */
  final case class Taken[A](value: A, at: Instant)

  private enum State[F[_], A]:
    /** No reading yet; the one under way, if any, for the callers to wait on. */
    case Empty(reading: Option[Deferred[F, Either[Throwable, Taken[A]]]])

    /** The last reading, the monotonic time from which the next is due, and whether it is under way. */
    case Ready(last: Taken[A], due: FiniteDuration, reading: Boolean)

  /** Readings of `read`, shared as [[Snapshot]] describes; `every` is zero or more. */
  def resource[F[_]: Temporal, A](read: F[A], every: FiniteDuration): Resource[F, Snapshot[F, A]] =
    for
      state <- Resource.eval(Ref.of[F, State[F, A]](State.Empty(None)))
      supervisor <- Supervisor[F](await = false)
    yield new Snapshot(read, every, state, supervisor)
