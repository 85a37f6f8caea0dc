package weir

import cats.effect.kernel.{Ref, Temporal}
import cats.syntax.all.*

import scala.concurrent.duration.FiniteDuration

/**
 * A run of failures of one kind that something rides out (a worker's database errors, a consumer's failed
 * commits), told once when it begins and once when it ends: the first [[failed]] after a success (or
 * after the start) runs `began` with its error; the failures after it run nothing, only counted; the first
 * [[succeeded]] after them runs `ended` with how many there were and how long the streak lasted. A
 * success outside a streak runs nothing, so a source may report every success.
 *
 * It is how weir's sources log what they ride out once per streak, not once per error (weir-postgres and
 * weir-kafka give it their loggers); it knows no logger itself, so that the core depends on Cats Effect
 * and FS2 alone. It is the usual [[Service.Faults]] of a [[Service]].
 *
 * ==Concurrent callers==
 * Allowed: of failures and successes that race, exactly one failure begins a streak and exactly one
 * success ends it, and every failure in between is counted in it. `began` and `ended` run on the caller's
 * fiber, uncancelably once the state has changed, so a streak that began is always told.
 */
final class Streak[F[_]] private (
    state: Ref[F, Option[Streak.Failing]],
    began: Throwable => F[Unit],
    ended: Streak.Ended => F[Unit]
)(using F: Temporal[F])
    extends Service.Faults[F]:

  // invariant: Some(failing) from the failure that began a streak to the success that ends it, None
  // otherwise; `failing.errors` counts the streak's failures, the first included

  /** Counts a failure; runs `began` with `error` if it begins a streak. */
  def failed(error: Throwable): F[Unit] =
    F.uncancelable(_ =>
      F.monotonic.flatMap(now =>
        state.modify {
          case None => (Some(Streak.Failing(1L, now)), began(error))
          case Some(failing) => (Some(failing.copy(errors = failing.errors + 1)), F.unit)
        }.flatten
      )
    )

  /** Ends the streak, if one is under way: runs `ended` with its count and length. */
  def succeeded: F[Unit] =
    // outside a streak (the usual case) a success reads the state only, not the clock
    state.get.flatMap {
      case None => F.unit
      case Some(_) =>
        F.uncancelable(_ =>
          F.monotonic.flatMap(now =>
            state.modify {
              case None => (None, F.unit)
              case Some(failing) => (None, ended(Streak.Ended(failing.errors, now - failing.since)))
            }.flatten
          )
        )
    }

  /** The failures of the streak under way, or 0 when none is. */
  def errors: F[Long] = state.get.map(_.fold(0L)(_.errors))

object Streak:

  /** How a streak ended: `errors` failures (at least one), the first of them `lasted` before the success. */
  final case class Ended(errors: Long, lasted: FiniteDuration)

  private final case class Failing(errors: Long, since: FiniteDuration)

  /** A streak that runs `began` when one begins and `ended` when it ends; no streak is under way. */
  def apply[F[_]](began: Throwable => F[Unit], ended: Ended => F[Unit])(using
      F: Temporal[F]
  ): F[Streak[F]] =
    Ref.of[F, Option[Failing]](None).map(new Streak(_, began, ended))
