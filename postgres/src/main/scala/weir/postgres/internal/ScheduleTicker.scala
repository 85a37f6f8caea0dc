package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import doobie.*
import weir.Service
import weir.postgres.Schedule

import java.util.concurrent.atomic.{AtomicLong, AtomicReference}
import scala.concurrent.duration.*

/**
 * Enqueues the due ticks of the schedules `names`: each round ticks every due row, one transaction per row
 * (lock it, insert its ticks' tasks, move it on: see [[ScheduleSql]]), then sleeps until the earliest next
 * tick, at most `checkEvery`. Every scheduler runs one and there is no leader: rows another scheduler is
 * ticking are skipped, and once its transaction commits the row is no longer due; if that scheduler dies
 * first, its transaction rolls back and the row is due again at the next look of any scheduler. Errors
 * are told to `faults` (counted, and logged once per streak) and the next round tries again; a round
 * without one ends the streak. A [[weir.Service]] named `scheduler`.
 */
private[postgres] object ScheduleTicker:

  /** What a scheduler did: ticks inserted, and the database errors it rode out. */
  final class Counters:
    val ticks, errors = new AtomicLong
    val lastError = new AtomicReference[Option[Throwable]](None)
    def error(e: Throwable): Unit =
      errors.incrementAndGet(): Unit
      lastError.set(Some(e))

  def resource[F[_]](
      run: Run[F],
      sql: ScheduleSql,
      names: Vector[String],
      checkEvery: FiniteDuration,
      idleTimeout: FiniteDuration,
      counters: Counters,
      faults: Service.Faults[F]
  )(using F: Async[F]): Resource[F, Unit] =
    val idleMillis = idleTimeout.toMillis.max(1L)

    // one row per transaction; a row whose timing does not read back is left alone for the rest of the
    // round, so that it cannot keep the rows behind it from their ticks. True when no row failed
    def tickAll(left: Array[String], clean: Boolean): F[Boolean] =
      if left.isEmpty then F.pure(clean)
      else
        // a tick's transaction and its count are one step: a release cannot land between a tick committed
        // and counted, so that the stats say every tick this scheduler enqueued
        F.uncancelable(_ =>
          run(sql.lockDue(left, idleMillis).flatMap {
            case None => FC.pure(Option.empty[Either[(String, Throwable), Int]])
            case Some(due) =>
              Either.catchNonFatal(Schedule.Timing.fromColumns(
                due.name,
                due.cron,
                due.zone,
                due.everyMs
              )) match
                case Left(e) => FC.pure(Some(Left((due.name, e))))
                case Right(timing) =>
                  val plan = Ticks.plan(timing, due.nextTick, due.lastTick, due.now, due.maxMissed)
                  sql.tick(due.name, plan.ticks.map(_.toEpochMilli).toArray, plan.next).map(n =>
                    Some(Right(n))
                  )
          }).flatTap {
            case Some(Right(inserted)) => F.delay(counters.ticks.addAndGet(inserted.toLong)).void
            case _ => F.unit
          }
        ).flatMap {
          case None => F.pure(clean)
          case Some(Right(_)) => tickAll(left, clean)
          case Some(Left((name, e))) =>
            faults.failed(e) *> tickAll(left.filterNot(_ == name), clean = false)
        }

    val all = names.toArray
    val round: F[FiniteDuration] =
      tickAll(all, clean = true).flatMap(clean =>
        run(sql.untilNext(all)).map(_.fold(checkEvery)(ms => ms.millis)) <* faults.succeeded.whenA(clean)
      )
    rounds(round, checkEvery, faults)

  /** A round at once, then after the wait it returns, kept within 1 ms and `checkEvery`. */
  def settings(checkEvery: FiniteDuration): Service.Settings =
    Service.Settings("scheduler", every = checkEvery, backoff = Service.Backoff.constant(checkEvery))

  /**
   * Runs `round` as its [[settings]] say; after a failed round (told to `faults`), after `checkEvery`.
   * A round that succeeds is not told to `faults`: it tells its own success, once no row of it failed.
   */
  def rounds[F[_]](round: F[FiniteDuration], checkEvery: FiniteDuration, faults: Service.Faults[F])(using
      F: Async[F]
  ): Resource[F, Unit] =
    val failures = new Service.Faults[F]:
      def failed(error: Throwable): F[Unit] = faults.failed(error)
      def succeeded: F[Unit] = F.unit
    Service.run(settings(checkEvery), failures)(
      round.map(wait => Service.Next.After(wait.max(1.millisecond).min(checkEvery)))
    )
