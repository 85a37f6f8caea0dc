package weir.postgres

import cats.effect.kernel.Async
import cats.syntax.all.*
import weir.postgres.internal.ScheduleSql

import java.time.Instant

/**
 * A schedule as its row stands ([[Overview.schedules]]): its name, queue, timing and policy for missed
 * ticks, the last tick enqueued (`None` before the first), the next tick, and how many ticks' tasks were
 * inserted so far (ticks dropped by the policy, or whose unique key an unfinished task held, are not
 * counted). A tick's task has the unique key `schedule:<name>:<tick in epoch milliseconds>`.
 */
final case class ScheduleInfo(
    name: String,
    queue: String,
    timing: Schedule.Timing,
    missed: Schedule.Missed,
    lastTick: Option[Instant],
    nextTick: Instant,
    ticks: Long
)

object ScheduleInfo:

  private[postgres] def list[F[_]: Async](db: Database[F]): F[Vector[ScheduleInfo]] =
    db.run(new ScheduleSql(db.schema).list).flatMap(_.traverse(row =>
      Async[F].catchNonFatal(of(row))
    ))

  private def of(row: ScheduleSql.Row): ScheduleInfo =
    val timing = Schedule.Timing.fromColumns(row.name, row.cron, row.zone, row.everyMs)
    val missed = if row.missed == "skip" then Schedule.Missed.skip else Schedule.Missed.catchUp(row.maxMissed)
    ScheduleInfo(row.name, row.queue, timing, missed, row.lastTick, row.nextTick, row.ticks)
