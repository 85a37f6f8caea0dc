package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.effect.std.Mutex
import cats.syntax.all.*

/**
 * One value shared by every user of a [[weir.postgres.Database]] that needs it (the workers' pools, the
 * process's session): opened by the first user, kept while any user holds it, closed when the last one
 * lets it go, and opened again by the next user after that.
 *
 * Blocks: a user waits while another opens or closes the value (opening is bounded by the connect
 * timeout of what it opens). Cancellation: opening and closing are uncancelable, as in `Resource.make`.
 * Errors: an open that fails fails that user's resource and leaves nothing open; the next user tries
 * again. Concurrent users are what it is for.
 */
private[postgres] final class Shared[F[_], A] private (mutex: Mutex[F], state: Shared.Holder[F, A])(using
    F: Async[F]
):
  import Shared.Held

  /**
   * The shared value, opened with `open` if no user holds it now (the first user's `open` is the one
   * used: every user of one `Shared` passes an equivalent one).
   */
  def use(open: Resource[F, A]): Resource[F, A] =
    Resource.make(mutex.lock.surround(state.get.flatMap {
      case Some(held) => state.set(Some(held.copy(users = held.users + 1))).as(held.value)
      case None => open.allocated.flatMap((value, close) => state.set(Some(Held(value, close, 1))).as(value))
    }))(_ =>
      mutex.lock.surround(state.get.flatMap {
        case Some(held) if held.users > 1 => state.set(Some(held.copy(users = held.users - 1)))
        case Some(held) => state.set(None) *> held.close
        case None => F.unit
      })
    )

  /** Closes the value if a user still holds it (the owner's release, after every user's). */
  def closeAll: F[Unit] =
    mutex.lock.surround(state.getAndSet(None).flatMap(_.fold(F.unit)(_.close)))

  /** How many users hold the value now. */
  def users: F[Int] = state.get.map(_.fold(0)(_.users))

private[postgres] object Shared:

  /** The value, how to close it, and how many users hold it (> 0). */
  private final case class Held[F[_], A](value: A, close: F[Unit], users: Int)

  private type Holder[F[_], A] = cats.effect.kernel.Ref[F, Option[Held[F, A]]]

  /** A `Shared` whose value is closed, at the latest, when the resource is released. */
  def resource[F[_], A](using F: Async[F]): Resource[F, Shared[F, A]] =
    Resource.make(
      (Mutex[F], F.ref(Option.empty[Held[F, A]])).mapN((m, s) => new Shared[F, A](m, s))
    )(_.closeAll)
