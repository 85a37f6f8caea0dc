package weir.postgres

import cats.effect.IO
import munit.CatsEffectSuite

import java.time.ZoneId
import scala.concurrent.duration.*

/**
 * A schedule's bad values throw nothing when it is built: they are named, with the schedule, in its `errors`,
 * and a scheduler given it fails to start with all of them.
 */
class ScheduleValidationSuite extends CatsEffectSuite:

  private def refused(schedule: => Schedule): String =
    val errors = schedule.errors
    assert(errors.nonEmpty, s"$schedule accepted")
    errors.mkString("; ")

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
    assertEquals(Schedule.Missed.catchUp(0).errors, List("maxMissed must be >= 1, was: 0"))
    assert(refused(Schedule.every(
      "e",
      1.second,
      queue = "q",
      payload = 1,
      missed = Schedule.Missed.catchUp(0)
    ))
      .contains("missed of schedule 'e': maxMissed must be >= 1, was: 0"))
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

  test(
    "a scheduler refuses repeated names, no schedules and bad schedules at once, before touching the database"
  ) {
    val a = Schedule.every("a", 1.second, queue = "q", payload = 1)
    val b = Schedule.cron("a", "* * * * *", queue = "q", payload = 2, zone = ZoneId.of("UTC"))
    val bad = Schedule.cron("c", "61 * * * *", queue = "", payload = 3)
    // the database is never reached: the arguments are checked first, when the resource is used
    val db = null.asInstanceOf[Database[IO]]
    def refusedIO(r: => cats.effect.Resource[IO, Scheduler[IO]]): IO[weir.InvalidSettings] =
      IO.defer(r.use_).intercept[weir.InvalidSettings]
    for
      all <- refusedIO(Scheduler.resource[IO](db, Vector(a, b, bad), checkEvery = Duration.Zero))
      none <- refusedIO(Scheduler.resource[IO](db, Vector.empty))
    yield
      val m = all.getMessage
      assert(m.startsWith("invalid Scheduler: "), m)
      assert(m.contains("was repeated: a"), m)
      assert(m.contains("checkEvery must be > 0, was: 0"), m)
      assert(
        m.contains("cron expression of schedule 'c' does not parse") && m.contains("was: '61 * * * *'"),
        m
      )
      assert(m.contains("queue of schedule 'c' must not be empty, was: ''"), m)
      assertEquals(all.errors.size, 4, m)
      assertEquals(none.errors, List("schedules must not be empty, was: none"))
  }
