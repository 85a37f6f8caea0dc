package weir.console.internal

import cats.effect.kernel.{Ref, Temporal}
import cats.syntax.all.*

import scala.concurrent.duration.*

/**
 * Login attempts per client address: at most `attempts` in a window of `window` that opens with an
 * address's first attempt; the next ones are refused until the window ends, with how long that is. Every
 * attempt counts, right or wrong, and it is counted before the token is compared, so that concurrent
 * attempts from one address cannot slip past the limit together.
 *
 * Bounded: at most `maxAddresses` addresses are kept. A new address that finds them all taken drops the
 * addresses whose window has ended, and if there is none, the one whose window opened first.
 *
 * Concurrent callers are allowed; each call is one atomic change of the state and never blocks.
 */
private[console] final class LoginThrottle[F[_]] private (
    state: Ref[F, Map[String, LoginThrottle.Window]],
    attempts: Int,
    window: FiniteDuration,
    maxAddresses: Int
)(using F: Temporal[F]):
  import LoginThrottle.*

  /** Counts an attempt from `address`: allowed, or refused with the time until its window ends. */
  def attempt(address: String): F[Either[FiniteDuration, Unit]] =
    F.monotonic.flatMap(now =>
      // invariant: at most `maxAddresses` windows; a window's count is at most `attempts`
      state.modify { all =>
        all.get(address).filter(_.start + window > now) match
          case Some(w) if w.count >= attempts => (all, Left(w.start + window - now))
          case Some(w) => (all.updated(address, w.copy(count = w.count + 1)), Right(()))
          case None =>
            val kept =
              if all.size < maxAddresses || all.contains(address) then all
              else all.filter(_._2.start + window > now)
            val room =
              if kept.size < maxAddresses || kept.contains(address) then kept
              else kept - kept.minBy(_._2.start)._1
            (room.updated(address, Window(now, 1)), Right(()))
      }
    )

  /** How many addresses are kept. */
  def size: F[Int] = state.get.map(_.size)

private[console] object LoginThrottle:

  /** Login attempts allowed per address and window. */
  val attempts: Int = 5

  /** The window, opened by an address's first attempt. */
  val window: FiniteDuration = 1.minute

  /** The most addresses kept. */
  val maxAddresses: Int = 10000

  final case class Window(start: FiniteDuration, count: Int)

  def apply[F[_]: Temporal](
      attempts: Int = LoginThrottle.attempts,
      window: FiniteDuration = LoginThrottle.window,
      maxAddresses: Int = LoginThrottle.maxAddresses
  ): F[LoginThrottle[F]] =
    Ref.of[F, Map[String, Window]](Map.empty).map(new LoginThrottle(_, attempts, window, maxAddresses))
