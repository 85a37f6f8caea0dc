package weir.postgres

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import doobie.implicits.*
import org.typelevel.log4cats.LoggerFactory
import org.typelevel.log4cats.noop.NoOpFactory
import weir.{Streak, Validation}
import weir.postgres.internal.{Errors, Faults, ScheduleSql, ScheduleTicker}

import scala.concurrent.duration.*

/**
 * Enqueues the ticks of periodic tasks ([[Schedule]]s). Run one in every process that should keep the
 * schedules going (typically each worker process, beside its [[DurableWorker]]s): each tick is enqueued
 * exactly once however many processes declare the schedule and whatever their clocks say, with no leader.
 *
 * {{{
 * val schedules = Vector(Schedule.cron("nightly-report", "0 3 * * *", queue = "reports", payload = Report("daily")))
 * (Scheduler.resource(db, schedules), DurableWorker.start[IO, Report, Unit](db, WorkerConfig("reports"))(build))
 *   .tupled.use(_ => IO.never)
 * }}}
 *
 * How: each schedule is a row of the `schedules` table. The server's clock decides when a tick is due
 * (`next_tick <= now()`); the scheduler that locks the row (the others skip it) inserts the tick's task,
 * with the unique key `schedule:<name>:<tick in epoch ms>`, and moves the row's `next_tick` past the tick,
 * in one transaction. A scheduler killed in the middle rolls back both; a tick is never enqueued twice
 * because the row cannot move backwards (see ADR 0027).
 */
trait Scheduler[F[_]]:

  /** What this process's scheduler has done. */
  def stats: F[Scheduler.Stats]

object Scheduler:

  /**
   * Ticks inserted by this scheduler (a tick enqueued by another process counts there), and the database
   * errors it rode out.
   */
  final case class Stats(ticks: Long, databaseErrors: Long, lastError: Option[Throwable])

  /**
   * Declares `schedules` (names unique, at least one) and enqueues their ticks until released.
   *
   *   - Declaring writes each schedule's row: a new name starts with its first tick after the server's
   *     `now()`; the same definition changes nothing; a different one replaces the row's (the last process to
   *     start wins), and a changed timing starts again from its first tick after `now()`. Every scheduler
   *     ticks from the row's definition, so processes that declare different versions of a schedule still
   *     enqueue each tick once.
   *   - `checkEvery` (default 1 s, > 0): the longest sleep between two looks at the table; a scheduler
   *     otherwise wakes at the earliest next tick. It bounds how late a tick is when the scheduler that was
   *     ticking it died mid-transaction.
   *
   * Blocks: nothing; the ticks run on a fiber of the resource, one short transaction per due schedule, on
   * the connections of [[Database.transactor]]'s pool.
   *
   * Errors: only starting fails the resource: [[weir.InvalidSettings]] naming every bad value, before the
   * database is touched (no schedules, repeated names, a `checkEvery` that is not positive, and each
   * schedule's own [[Schedule.errors]]); the driver's error if the rows cannot be written. Once started, a
   * failing database, or a schedule's row whose timing does not read back, is ridden out (counted in
   * [[Stats]]); the resource's release stops the ticks, and a transaction it interrupts rolls back.
   *
   * Logs, on the logger `weir.postgres.scheduler` of the `LoggerFactory` in scope (none: nothing is logged):
   * a streak of errors once when it begins (WARN, with the error) and once when a round ticks every due
   * schedule again (INFO, with the streak's count and length); never a line per tick.
   *
   * Concurrent schedulers of the same schedules, in one process or many, are what this is for.
   */
  def resource[F[_]](db: Database[F], schedules: Seq[Schedule], checkEvery: FiniteDuration = 1.second)(using
      F: Async[F]
  )(using logs: LoggerFactory[F] = NoOpFactory[F]): Resource[F, Scheduler[F]] =
    val all = if schedules == null then Vector.empty else schedules.toVector
    val repeated = all.groupBy(_.name).collect { case (name, s) if s.size > 1 => name }
    val errors =
      Validation.check(all.nonEmpty, "schedules must not be empty, was: none") ++
        Validation.check(checkEvery > Duration.Zero, s"checkEvery must be > 0, was: $checkEvery") ++
        Validation.check(
          repeated.isEmpty,
          s"schedule names must be unique, was repeated: ${repeated.toVector.sorted.mkString(", ")}"
        ) ++ all.flatMap(_.errors)
    // nothing of `db` is read before the schedules are checked
    Validation.resource("Scheduler", errors).flatMap { _ =>
      val sql = new ScheduleSql(db.schema)
      val counters = new ScheduleTicker.Counters
      // one transaction: the first ticks are computed from the server's clock it reads; rows are written in
      // name order, so that processes declaring the same schedules at once cannot deadlock on them
      val declare = db.run(sql.now.flatMap(now =>
        all.sortBy(_.name).traverse_(s => sql.declare(s, s.timing.after(now)))
      ))
      Resource.eval(declare) *> Resource.eval(streak(all.map(_.name))).flatMap(streak =>
        ScheduleTicker
          .resource(
            db.run,
            sql,
            all.map(_.name),
            checkEvery,
            db.readTimeout,
            counters,
            new Faults(counters.error, streak)
          )
          .as(new Scheduler[F]:
            def stats: F[Stats] =
              F.delay(Stats(counters.ticks.get, counters.errors.get, counters.lastError.get)))
      )
    }

  /** The logger of schedulers. */
  private val loggerName: String = "weir.postgres.scheduler"

  private def streak[F[_]](names: Vector[String])(using F: Async[F], logs: LoggerFactory[F]): F[Streak[F]] =
    val log = logs.getLoggerFromName(loggerName)
    val who = s"scheduler of ${names.sorted.map(n => s"'$n'").mkString(", ")}"
    Streak[F](
      began = e =>
        log.warn(e)(
          s"$who: ticking failed (retried; logged again once a round succeeds): ${Errors.describe(e)}"
        ),
      ended = end =>
        log.info(
          s"$who: ticking succeeded again after ${end.errors} error(s) over ${end.lasted.toMillis} ms"
        )
    )
