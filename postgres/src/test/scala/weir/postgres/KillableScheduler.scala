package weir.postgres

import cats.effect.{ExitCode, IO, IOApp}

import scala.concurrent.duration.*

/**
 * A scheduler process for [[ScheduleKillSuite]]: ticks the schedule `name` (every `everyMillis`, into queue
 * `ticks`, as the suite's own scheduler does) beside the suite's scheduler, printing `scheduling` once it
 * runs, until it is killed.
 *
 * args: url schema name everyMillis
 */
object KillableScheduler extends IOApp:

  def run(args: List[String]): IO[ExitCode] =
    val List(url, schemaName, name, everyMillis) = args: @unchecked
    val schedule = Schedule.every(
      name,
      everyMillis.toLong.millis,
      queue = "ticks",
      payload = 0,
      missed = Schedule.Missed.catchUp(100000)
    )
    Database.connect[IO](DatabaseConfig(url, schema = Schema(schemaName), poolSize = 2)).use { db =>
      Scheduler.resource(db, Vector(schedule), checkEvery = 50.millis).use { _ =>
        IO.println("scheduling") *> IO.never
      }
    }
