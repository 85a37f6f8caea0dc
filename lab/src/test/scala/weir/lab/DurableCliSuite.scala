package weir.lab

import cats.effect.{ExitCode, IO, Resource}
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres
import munit.CatsEffectSuite
import weir.postgres.{Database, DatabaseConfig, Schedule, Scheduler, Schema}

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
      first <- DurableCli.run(List("migrate", "--url", url, "--schema", "cli_a"))
      second <- DurableCli.run(List("migrate", "--url", url, "--schema", "cli_a"))
      stats <- DurableCli.run(List("stats", "--url", url, "--schema", "cli_a"))
      missing <- DurableCli.run(List("stats", "--url", url, "--schema", "cli_never_migrated"))
      noSchedules <- DurableCli.run(List("schedules", "--url", url, "--schema", "cli_a"))
      config = DatabaseConfig(url, schema = Schema("cli_a"))
      _ <- Database.connect[IO](config).use(db =>
        Scheduler.resource(
          db,
          Vector(Schedule.cron("nightly", "0 3 * * *", queue = "reports", payload = 1))
        ).use_
      )
      schedules <- DurableCli.run(List("schedules", "--url", url, "--schema", "cli_a"))
    yield
      assertEquals((first, second, stats), (ExitCode.Success, ExitCode.Success, ExitCode.Success))
      assertEquals((noSchedules, schedules), (ExitCode.Success, ExitCode.Success))
      assertEquals(missing, ExitCode(1))
  }

  test("bad arguments are refused with exit code 2") {
    for
      noCommand <- DurableCli.run(List("--url", "postgresql://h/db"))
      badSchema <- DurableCli.run(List("stats", "--url", "postgresql://h/db", "--schema", "Bad;"))
      unknown <- DurableCli.run(List("stats", "--frobnicate"))
    yield assertEquals(List(noCommand, badSchema, unknown), List.fill(3)(ExitCode(2)))
  }
