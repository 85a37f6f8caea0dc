package weir.cli

import cats.effect.{ExitCode, IO, Resource}
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres
import munit.CatsEffectSuite
import weir.postgres.{
  Database, DatabaseConfig, NewTask, QueueRate, Schedule, Scheduler, Schema, TaskAdmin, TaskQueue
}

class DurableCliSuite extends CatsEffectSuite:

  private val server = ResourceSuiteLocalFixture(
    "postgres",
    Resource.make(IO.blocking(EmbeddedPostgres.builder().start()))(pg => IO.blocking(pg.close()))
  )
  override def munitFixtures = List(server)

  test(
    "migrate applies the schema once, then reports it up to date; stats counts its tasks; schedules lists them"
  ) {
    val url = server().getJdbcUrl("postgres", "postgres")
    for
      first <- Main.run(List("durable", "migrate", "--url", url, "--schema", "cli_a"))
      second <- Main.run(List("durable", "migrate", "--url", url, "--schema", "cli_a"))
      stats <- Main.run(List("durable", "stats", "--url", url, "--schema", "cli_a"))
      missing <- Main.run(List("durable", "stats", "--url", url, "--schema", "cli_never_migrated"))
      noSchedules <- Main.run(List("durable", "schedules", "--url", url, "--schema", "cli_a"))
      config = DatabaseConfig(url, schema = Schema("cli_a"))
      _ <- Database.connect[IO](config).use(db =>
        Scheduler.resource(
          db,
          Vector(Schedule.cron("nightly", "0 3 * * *", queue = "reports", payload = 1))
        ).use_
      )
      schedules <- Main.run(List("durable", "schedules", "--url", url, "--schema", "cli_a"))
    yield
      assertEquals((first, second, stats), (ExitCode.Success, ExitCode.Success, ExitCode.Success))
      assertEquals((noSchedules, schedules), (ExitCode.Success, ExitCode.Success))
      assertEquals(missing, ExitCode(1))
  }

  test("pause, resume and limit change the controls every worker obeys; an unknown queue is an error") {
    val url = server().getJdbcUrl("postgres", "postgres")
    val config = DatabaseConfig(url, schema = Schema("cli_q"))
    def cli(args: String*) = Main.run("durable" :: args.toList ++ List("--url", url, "--schema", "cli_q"))
    def controls = Database.connect[IO](config).use(db => TaskAdmin(db).overview.queues)
    for
      _ <- Database.migrate[IO](config)
      _ <- Database.connect[IO](config).use(db => TaskQueue[IO, Int](db, "mail").enqueue(NewTask(1)))
      unknown <- cli("pause", "nowhere")
      paused <- cli("pause", "mail")
      whilePaused <- controls
      limited <- cli("limit", "mail", "--max-running", "3", "--rate", "2.5", "--burst", "4")
      resumed <- cli("resume", "mail")
      listed <- cli("queues")
      afterLimit <- controls
      unlimited <- cli("limit", "mail", "--no-max-running", "--no-rate")
      afterUnlimit <- controls
    yield
      assertEquals(unknown, ExitCode(1))
      assertEquals(List(paused, limited, resumed, listed, unlimited), List.fill(5)(ExitCode.Success))
      assertEquals(whilePaused.map(q => (q.name, q.paused)), Vector("mail" -> true))
      assertEquals(
        afterLimit.map(q => (q.paused, q.maxRunning, q.rate)),
        Vector((false, Some(3), Some(QueueRate(2.5, 4))))
      )
      assertEquals(afterUnlimit.map(q => (q.paused, q.maxRunning, q.rate)), Vector((false, None, None)))
  }

  test("cancel cancels a waiting task; a finished or unknown one is an error that changes nothing") {
    val url = server().getJdbcUrl("postgres", "postgres")
    val config = DatabaseConfig(url, schema = Schema("cli_c"))
    def cli(args: String*) = Main.run("durable" :: args.toList ++ List("--url", url, "--schema", "cli_c"))
    for
      _ <- Database.migrate[IO](config)
      id <- Database.connect[IO](config).use(db => TaskQueue[IO, Int](db, "mail").enqueue(NewTask(1)))
        .map(_.taskId)
      cancelled <- cli("cancel", id.toString, "--reason", "wrong recipient")
      again <- cli("cancel", id.toString)
      missing <- cli("cancel", "999999")
      stats <- Database.connect[IO](config).use(db => TaskAdmin(db).overview.stats)
    yield
      assertEquals((cancelled, again, missing), (ExitCode.Success, ExitCode(1), ExitCode(1)))
      assertEquals(stats.map(s => (s.queue, s.available, s.cancelled)), Vector(("mail", 0L, 1L)))
  }

  test("bad arguments are refused with exit code 2") {
    for
      noCommand <- Main.run(List("durable", "--url", "postgresql://h/db"))
      badSchema <- Main.run(List("durable", "stats", "--url", "postgresql://h/db", "--schema", "Bad;"))
      unknown <- Main.run(List("durable", "stats", "--frobnicate"))
      zeroLimit <- Main.run(List("durable", "limit", "q", "--max-running", "0", "--url", "postgresql://h/db"))
      nanRate <- Main.run(List("durable", "limit", "q", "--rate", "NaN", "--url", "postgresql://h/db"))
      nothingToSet <- Main.run(List("durable", "limit", "q", "--url", "postgresql://h/db"))
      burstAlone <- Main.run(List("durable", "limit", "q", "--burst", "3", "--url", "postgresql://h/db"))
      noQueue <- Main.run(List("durable", "pause", "--url", "postgresql://h/db"))
      noTask <- Main.run(List("durable", "cancel", "--url", "postgresql://h/db"))
      badTask <- Main.run(List("durable", "cancel", "seven", "--url", "postgresql://h/db"))
      emptyReason <- Main.run(List("durable", "cancel", "7", "--reason", "", "--url", "postgresql://h/db"))
    yield assertEquals(
      List(
        noCommand,
        badSchema,
        unknown,
        zeroLimit,
        nanRate,
        nothingToSet,
        burstAlone,
        noQueue,
        noTask,
        badTask,
        emptyReason
      ),
      List.fill(11)(ExitCode(2))
    )
  }
