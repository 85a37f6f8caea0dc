package weir.postgres

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.postgres.internal.ScheduleSql
import weir.testkit.Eventually

import java.time.Instant
import scala.concurrent.duration.*

/**
 * Periodic tasks against a real server: however many schedulers declare a schedule, each tick is enqueued
 * once; after a downtime the policy decides which missed ticks come; a scheduler that dies inside a tick's
 * transaction loses no tick and doubles none. The server's clock decides what is due, so a downtime is
 * planted by moving a row's ticks into the past.
 */
class ScheduleSuite extends DbSuite:

  /** `(tick in epoch ms, tasks)` of every task of schedule `name`, unfinished or finished, by tick. */
  private def tasksByTick(db: Database[IO], name: String): IO[Vector[(Long, Long)]] =
    Fragment
      .const(s"""SELECT split_part(unique_key, ':', 3)::bigint, count(*) FROM (
          SELECT unique_key FROM ${db.schema("tasks")} WHERE unique_key LIKE 'schedule:$name:%'
          UNION ALL
          SELECT unique_key FROM ${db.schema("finished")} WHERE unique_key LIKE 'schedule:$name:%'
        ) AS k GROUP BY 1 ORDER BY 1""")
      .query[(Long, Long)]
      .to[Vector]
      .transact(TestDatabase.admin)

  private def row(db: Database[IO], name: String): IO[ScheduleInfo] =
    TaskAdmin(db).overview.schedules.map(_.find(_.name == name).getOrElse(fail(s"no schedule '$name'")))

  /** Moves a schedule's ticks into the past, as a downtime of every scheduler would leave them. */
  private def downtime(db: Database[IO], name: String, last: String, next: String): IO[Unit] =
    Rows.exec(
      s"UPDATE ${db.schema("schedules")} SET last_tick = $last, next_tick = $next WHERE name = '$name'"
    ).void

  withDb("four schedulers declaring one schedule enqueue each tick exactly once, with no tick left out") {
    db =>
      val every = 100.millis
      val schedule =
        Schedule.every("beat", every, queue = "beats", payload = 7, missed = Schedule.Missed.catchUp(1000))
      val config = TestDatabase.config(db.schema).copy(poolSize = 2)
      val scheduler = Database.connect[IO](config).flatMap(own =>
        Scheduler.resource(own, Vector(schedule), checkEvery = 50.millis)
      )
      for
        // the stats are read once the schedulers have stopped, as the table is: read while they ran, a tick
        // committed after the read would be in the table and not in the stats
        schedulers <- List.fill(4)(scheduler).parSequence.use { schedulers =>
          Eventually.until("25 ticks of beat", row(db, "beat"))(_.ticks >= 25).as(schedulers)
        }
        stats <- schedulers.traverse(_.stats)
        byTick <- tasksByTick(db, "beat")
        info <- row(db, "beat")
        payloads <-
          Fragment.const(s"SELECT DISTINCT payload::text FROM ${db.schema("tasks")}").query[String].to[
            Vector
          ].transact(TestDatabase.admin)
      yield
        assert(byTick.size >= 25, byTick)
        assertEquals(byTick.filter(_._2 != 1L), Vector.empty, "ticks enqueued more than once")
        val ticks = byTick.map(_._1)
        assertEquals(
          ticks.zip(ticks.tail).map((a, b) => b - a).distinct,
          Vector(every.toMillis),
          "a tick left out"
        )
        assert(ticks.forall(_ % every.toMillis == 0), ticks)
        assertEquals(info.ticks, byTick.size.toLong)
        assertEquals(stats.map(_.ticks).sum, byTick.size.toLong)
        assertEquals(info.lastTick, Some(Instant.ofEpochMilli(ticks.last)))
        assertEquals(payloads, Vector("7"))
        assert(stats.forall(_.databaseErrors == 0L), stats)
  }

  withDb(
    "after a downtime, skip enqueues the latest missed tick only and catch-up the latest n, oldest first"
  ) {
    db =>
      val schedules = Vector(
        Schedule.every("skipping", 1.hour, queue = "q", payload = 1),
        Schedule.every("catching", 1.hour, queue = "q", payload = 2, missed = Schedule.Missed.catchUp(3))
      )
      val tenHoursAgo = "date_trunc('hour', now()) - interval '10 hours'"
      for
        _ <- Scheduler.resource(db, schedules).use_
        declared <- TaskAdmin(db).overview.schedules
        _ <- schedules.traverse_(s => downtime(db, s.name, tenHoursAgo, s"$tenHoursAgo + interval '1 hour'"))
        _ <- Scheduler.resource(db, schedules, checkEvery = 100.millis).use { _ =>
          Eventually.until("a tick of every schedule", TaskAdmin(db).overview.schedules)(_.forall(_.ticks >
            0))
        }
        skipped <- tasksByTick(db, "skipping")
        caught <- tasksByTick(db, "catching")
        after <- TaskAdmin(db).overview.schedules
        serverNow <- sql"SELECT now()".query[Instant].unique.transact(TestDatabase.admin)
        run <- Fragment
          .const(
            s"SELECT run_at, headers->>'weir.tick', headers->>'weir.schedule' FROM ${db.schema("tasks")} ORDER BY id"
          )
          .query[(Instant, String, String)]
          .to[Vector]
          .transact(TestDatabase.admin)
      yield
        assertEquals(
          declared.map(d => (d.name, d.lastTick, d.ticks)),
          Vector(("catching", None, 0L), ("skipping", None, 0L))
        )
        val hour = 1.hour.toMillis
        val bySchedule = after.map(i => i.name -> i).toMap
        val last = bySchedule("skipping").lastTick.get.toEpochMilli
        assertEquals(skipped, Vector(last -> 1L))
        val lastCaught = bySchedule("catching").lastTick.get.toEpochMilli
        assertEquals(caught, Vector(lastCaught - 2 * hour -> 1L, lastCaught - hour -> 1L, lastCaught -> 1L))
        // the latest due tick is the last hour at or before the server's clock
        assert(serverNow.toEpochMilli - last < hour && serverNow.toEpochMilli >= last, (serverNow, last))
        after.foreach(i => assertEquals(i.nextTick, Instant.ofEpochMilli(i.lastTick.get.toEpochMilli + hour)))
        assertEquals(after.map(_.ticks), Vector(3L, 1L))
        assertEquals(after.map(_.missed), Vector(Schedule.Missed.catchUp(3), Schedule.Missed.skip))
        // each task runs at its tick, oldest first, and says which tick it is
        assertEquals(run.map(_._1), run.map(_._1).sorted)
        run.foreach((at, tick, name) =>
          assertEquals(Instant.parse(tick), at)
          assert(Set("skipping", "catching")(name), name)
        )
  }

  withDb("a scheduler killed inside a tick's transaction loses no tick and doubles none") { db =>
    val sql = new ScheduleSql(db.schema)
    val schedule =
      Schedule.every("k", 1.hour, queue = "q", payload = 1, missed = Schedule.Missed.catchUp(5))
    val fiveHoursAgo = "date_trunc('hour', now()) - interval '5 hours'"
    // a session whose transaction is never committed: the server sees the process die inside it
    val doomed: Resource[IO, (Transactor[IO], Int)] = TestDatabase.doomed
    for
      _ <- Scheduler.resource(db, Vector(schedule)).use_
      _ <- downtime(db, "k", fiveHoursAgo, s"$fiveHoursAgo + interval '1 hour'")
      doomedInserted <- doomed.use { (xa, pid) =>
        for
          due <- sql.lockDue(Array("k"), 60000L).transact(xa)
          inserted <-
            sql.tick("k", due.toVector.flatMap(d => tickMillis(d)).toArray, Instant.now().plusSeconds(3600))
              .transact(xa)
          // a live scheduler meanwhile finds the row locked and skips it
          skippedByLive <- sql.lockDue(Array("k"), 60000L).transact(db.transactor)
          _ <- Rows.select(s"SELECT pg_terminate_backend($pid)")
        yield
          assertEquals(skippedByLive, None)
          inserted
      }
      _ <- Scheduler.resource(db, Vector(schedule), checkEvery = 100.millis).use { _ =>
        Eventually.until("a tick of k", row(db, "k"))(_.ticks > 0)
      }
      byTick <- tasksByTick(db, "k")
      info <- row(db, "k")
    yield
      assertEquals(doomedInserted, 5)
      val hour = 1.hour.toMillis
      val last = info.lastTick.get.toEpochMilli
      assertEquals(byTick, (4 to 0 by -1).toVector.map(k => (last - k * hour) -> 1L))
      assertEquals(info.ticks, 5L)
  }

  withDb(
    "declaring: the same definition changes nothing, another replaces it, and a new timing starts afresh"
  ) {
    db =>
      val first = Schedule.every("d", 1.hour, queue = "q", payload = 1)
      val updatedAt = Fragment
        .const(s"SELECT updated_at FROM ${db.schema("schedules")} WHERE name = 'd'")
        .query[Instant]
        .unique
        .transact(TestDatabase.admin)
      for
        _ <- Scheduler.resource(db, Vector(first)).use_
        before <- updatedAt
        _ <- Vector.fill(3)(Scheduler.resource(db, Vector(first)).use_).parSequence_
        same <- updatedAt
        _ <- Scheduler.resource(
          db,
          Vector(Schedule.cron(
            "d",
            "*/5 * * * *",
            queue = "other",
            payload = 2,
            missed = Schedule.Missed.catchUp(2)
          ))
        ).use_
        changed <- row(db, "d")
        serverNow <- sql"SELECT now()".query[Instant].unique.transact(TestDatabase.admin)
      yield
        assertEquals(same, before)
        assertEquals(changed.queue, "other")
        assertEquals(changed.timing.toString, "*/5 * * * * (UTC)")
        assertEquals(changed.missed, Schedule.Missed.catchUp(2))
        assert(
          changed.nextTick.isAfter(serverNow.minusSeconds(1)) &&
            !changed.nextTick.isAfter(serverNow.plusSeconds(300)),
          (changed, serverNow)
        )
  }

  private def tickMillis(due: ScheduleSql.Due): Vector[Long] =
    internal.Ticks
      .plan(
        Schedule.Timing.fromColumns(due.name, due.cron, due.zone, due.everyMs),
        due.nextTick,
        due.lastTick,
        due.now,
        due.maxMissed
      )
      .ticks
      .map(_.toEpochMilli)

  withDb("a row whose last tick is ahead of the server's clock enqueues nothing and moves on past it") { db =>
    val schedule =
      Schedule.every("back", 1.minute, queue = "q", payload = 1, missed = Schedule.Missed.catchUp(100))
    // the server's clock went back: the last tick is an hour ahead of now, the next one already due
    val ahead = "date_trunc('minute', now()) + interval '1 hour'"
    for
      _ <- Scheduler.resource(db, Vector(schedule)).use_
      _ <- Rows.exec(
        s"UPDATE ${db.schema("schedules")} SET last_tick = $ahead, next_tick = now() - interval '10 minutes' WHERE name = 'back'"
      )
      info <- Scheduler.resource(db, Vector(schedule), checkEvery = 100.millis).use { _ =>
        Eventually.until("the next tick after the last", TaskAdmin(db).overview.schedules.map(_.head))(i =>
          i.nextTick.isAfter(i.lastTick.get)
        )
      }
      tasks <- Rows.count(db, "tasks")
    yield
      assertEquals(tasks, 0L)
      assertEquals(info.ticks, 0L)
      assertEquals(info.nextTick, info.lastTick.get.plusSeconds(60))
  }
