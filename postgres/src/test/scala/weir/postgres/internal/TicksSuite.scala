package weir.postgres.internal

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}
import weir.postgres.Schedule

import java.time.{Instant, ZoneId}
import scala.concurrent.duration.*

/** The plan of a due schedule: which ticks, and where it goes next. */
class TicksSuite extends ScalaCheckSuite:

  private def every(ms: Long) = Schedule.Timing.every("t", ms.millis)
  private def at(s: String) = Instant.parse(s)

  // every tick of `timing` in [from, to], by walking forward
  private def enumerate(timing: Schedule.Timing, from: Instant, to: Instant): Vector[Instant] =
    Iterator.iterate(timing.after(from.minusNanos(1)))(timing.after).takeWhile(!_.isAfter(to)).toVector

  property(
    "an interval's plan is the latest maxMissed due ticks after last, oldest first, and next is after now"
  ) {
    val draws =
      for
        ms <- Gen.choose(1L, 5000L)
        k <- Gen.choose(-1000L, 1000L)
        lateBy <- Gen.choose(0L, 40000L)
        lastBack <- Gen.option(Gen.choose(-3L, 20L))
        maxMissed <- Gen.choose(1, 12)
      yield (ms, k, lateBy, lastBack, maxMissed)
    Prop.forAll(draws) { (ms, k, lateBy, lastBack, maxMissed) =>
      val timing = every(ms)
      val next = Instant.ofEpochMilli(1_800_000_000_000L / ms * ms + k * ms)
      val now = next.plusMillis(lateBy).plusNanos(lateBy % 7 * 1000)
      // last_tick: a tick before next, or (a changed timing, a clock gone back) at or after it
      val last = lastBack.map(b => next.minusMillis(b * ms))
      val plan = Ticks.plan(timing, next, last, now, maxMissed)
      val due = enumerate(timing, next, now).filter(t => last.forall(t.isAfter))
      assertEquals(plan.ticks, due.takeRight(maxMissed))
      assert(plan.next.isAfter(now) && last.forall(plan.next.isAfter), plan)
      assertEquals(plan.next, timing.after(if last.exists(_.isAfter(now)) then last.get else now))
    }
  }

  test("skip after a downtime: the latest due tick only; catch-up: the latest n, oldest first") {
    val hourly = every(1.hour.toMillis)
    val next = at("2026-11-27T01:00:00Z")
    val now = at("2026-11-27T10:30:00Z")
    val skip = Ticks.plan(hourly, next, Some(at("2026-11-27T00:00:00Z")), now, Schedule.Missed.skip.maxMissed)
    assertEquals(skip, Ticks.Plan(Vector(at("2026-11-27T10:00:00Z")), at("2026-11-27T11:00:00Z")))
    val three = Ticks.plan(hourly, next, None, now, Schedule.Missed.catchUp(3).maxMissed)
    assertEquals(three.ticks, Vector("08", "09", "10").map(h => at(s"2026-11-27T$h:00:00Z")))
    // a tick due exactly now is due
    assertEquals(Ticks.plan(hourly, next, None, next, 5).ticks, Vector(next))
  }

  test("a tick at or before last_tick never comes back, even when the server's clock went back") {
    val minutely = every(60000L)
    val last = at("2026-11-27T10:00:00Z")
    val plan = Ticks.plan(minutely, at("2026-11-27T09:00:00Z"), Some(last), at("2026-11-27T09:30:00Z"), 100)
    assertEquals(plan, Ticks.Plan(Vector.empty, at("2026-11-27T10:01:00Z")))
  }

  test("cron ticks: at the named minutes, in the schedule's zone") {
    val quarter = Schedule.Timing.cron("q", "*/15 * * * *", ZoneId.of("UTC"))
    assertEquals(quarter.after(at("2026-11-27T10:00:00Z")), at("2026-11-27T10:15:00Z"))
    assertEquals(quarter.after(at("2026-11-27T10:14:59.999999Z")), at("2026-11-27T10:15:00Z"))
    assertEquals(quarter.atOrBefore(at("2026-11-27T10:15:00Z")), Some(at("2026-11-27T10:15:00Z")))
    assertEquals(quarter.before(at("2026-11-27T10:15:00Z")), Some(at("2026-11-27T10:00:00Z")))
    assertEquals(quarter.atOrBefore(at("2026-11-27T10:29:59.5Z")), Some(at("2026-11-27T10:15:00Z")))
    val paris = Schedule.Timing.cron("p", "0 3 * * *", ZoneId.of("Europe/Paris"))
    assertEquals(paris.after(at("2026-11-27T00:00:00Z")), at("2026-11-27T02:00:00Z")) // CET, UTC+1
    assertEquals(paris.after(at("2026-07-01T00:00:00Z")), at("2026-07-01T01:00:00Z")) // CEST, UTC+2
    val plan = Ticks.plan(quarter, at("2026-11-27T09:15:00Z"), None, at("2026-11-27T10:20:00Z"), 10)
    assertEquals(
      plan.ticks,
      Vector("09:15", "09:30", "09:45", "10:00", "10:15").map(t => at(s"2026-11-27T$t:00Z"))
    )
    assertEquals(plan.next, at("2026-11-27T10:30:00Z"))
  }

  test("an interval ticks at the multiples of itself since the epoch") {
    val hourly = every(1.hour.toMillis)
    assertEquals(hourly.after(at("2026-11-27T10:20:00.5Z")), at("2026-11-27T11:00:00Z"))
    assertEquals(hourly.after(at("2026-11-27T11:00:00Z")), at("2026-11-27T12:00:00Z"))
    assertEquals(hourly.atOrBefore(at("2026-11-27T11:00:00Z")), Some(at("2026-11-27T11:00:00Z")))
    assertEquals(hourly.before(at("2026-11-27T11:00:00Z")), Some(at("2026-11-27T10:00:00Z")))
    assertEquals(hourly.before(at("2026-11-27T11:00:00.000001Z")), Some(at("2026-11-27T11:00:00Z")))
  }
