package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*

import scala.concurrent.duration.FiniteDuration

/**
 * A worker's maintenance loop (the heartbeat, the rescuer, the pruner, the head repair): `round` after
 * every `every`, on a background fiber for the resource's life. A round that fails is reported to the
 * part's `faults` (counted, and logged once per streak) and the next one tries again: a database error
 * never ends the loop; a round that succeeds ends the streak. Release cancels the fiber, and a round in
 * progress with it (each round is written to leave nothing half-done when cancelled: one statement, or
 * one transaction).
 */
private[postgres] object Periodic:

  def resource[F[_]](every: FiniteDuration, faults: Faults[F])(round: F[Unit])(using
      F: Async[F]
  ): Resource[F, Unit] =
    F.background((F.sleep(every) *> round.redeemWith(faults.failed, _ => faults.succeeded)).foreverM[Unit])
      .void
