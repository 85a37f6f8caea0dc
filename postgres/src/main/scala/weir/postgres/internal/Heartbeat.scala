package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*

import scala.concurrent.duration.*

/**
 * Keeps a worker alive in the database: every `every` it writes its heartbeat (registering again if a
 * rescuer had removed it) and extends the leases of the claims it holds that end within half a lease. The
 * same statement names the claims whose rows are no longer this worker's: those another worker rescued
 * are marked taken in [[Claims]] and counted.
 * Runs on the worker's maintenance pool, so a pool busy with claims and handlers never delays it.
 * Errors are counted and the next beat tries again.
 */
private[postgres] object Heartbeat:

  def resource[F[_]](
      run: Run[F],
      sql: Sql,
      owner: Long,
      name: String,
      every: FiniteDuration,
      lease: FiniteDuration,
      claims: Claims,
      counters: Counters
  )(using F: Async[F]): Resource[F, Unit] =
    val beat =
      F.delay(claims.tokens).flatMap { tokens =>
        run(sql.heartbeat(owner, name, every.toMillis) *>
          (if tokens.isEmpty then FC.pure(Vector.empty[Long]) else sql.extendLeases(tokens, lease.toMillis)))
          .flatMap(gone => F.delay(counters.taken.addAndGet(claims.taken(gone).toLong)).void)
      }
    val loop = (F.sleep(every) *> beat.void.handleErrorWith(e => F.delay(counters.error(e)))).foreverM[Unit]
    F.background(loop).void
