package weir.postgres

import cats.effect.IO
import munit.FunSuite

import java.time.ZoneId
import scala.concurrent.duration.*

/** A schedule's bad values fail when it is built, naming the schedule and the value. */
class ScheduleValidationSuite extends FunSuite:

  private def refused(body: => Any): String = intercept[IllegalArgumentException](body).getMessage

  test("a cron expression that does not parse is refused, naming the schedule and the expression") {
    Vector("61 * * * *", "not a cron", "0 0 * * * ?", "* * * *", "").foreach { expr =>
      val message = refused(Schedule.cron("report", expr, queue = "q", payload = 1))
      assert(message.contains("schedule 'report'") && message.contains(s"was: '$expr'"), message)
    }
  }

  test("an interval under 1 ms or not in whole milliseconds is refused, naming the value") {
    Vector(Duration.Zero, -1.second, 500.micros, 1500.micros).foreach { d =>
      val message = refused(Schedule.every("ping", d, queue = "q", payload = 1))
      assert(message.contains("schedule 'ping'") && message.contains(s"was: $d"), message)
    }
  }

  test("an empty name or queue, maxMissed < 1 and the task's own bad values are refused, naming them") {
    assert(refused(Schedule.every("", 1.second, queue = "q", payload = 1)).contains("was: ''"))
    assert(refused(Schedule.cron("", "* * * * *", queue = "q", payload = 1)).contains("was: ''"))
    assert(refused(Schedule.every("e", 1.second, queue = "", payload = 1)).contains("queue of schedule 'e'"))
    assert(refused(Schedule.Missed.catchUp(0)).contains("maxMissed must be >= 1, was: 0"))
    assert(refused(Schedule.every(
      "e",
      1.second,
      queue = "q",
      payload = 1,
      maxAttempts = 0
    )).contains("was: 0"))
    assert(refused(Schedule.every(
      "e",
      1.second,
      queue = "q",
      payload = 1,
      priority = 40000
    )).contains("40000"))
    assert(refused(Schedule.every(
      "e",
      1.second,
      queue = "q",
      payload = 1,
      headers = Map("" -> "v")
    )).contains(
      "header keys must not be empty"
    ))
  }

  test("a scheduler refuses repeated names and no schedules, before touching the database") {
    val a = Schedule.every("a", 1.second, queue = "q", payload = 1)
    val b = Schedule.cron("a", "* * * * *", queue = "q", payload = 2, zone = ZoneId.of("UTC"))
    // the database is never reached: the arguments are checked when the resource is built
    val db = null.asInstanceOf[Database[IO]]
    assert(refused(Scheduler.resource[IO](db, Vector(a, b))).contains("was repeated: a"))
    assert(refused(Scheduler.resource[IO](db, Vector.empty)).contains("schedules must not be empty"))
    assert(refused(Scheduler.resource[IO](db, Vector(a), checkEvery = Duration.Zero)).contains("was: 0"))
  }
