package weir.testkit.postgres

import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import munit.CatsEffectSuite
import weir.postgres.{Database, DatabaseConfig, NewTask, TaskQueue}
import weir.testkit.PostgresServer

import scala.concurrent.duration.*

/** Each use gets weir's schema of its own, usable at once, and dropped on release. */
class TestDatabaseSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 120.seconds

  private def schemaExists(url: String, name: String): IO[Boolean] =
    val (jdbc, props) = DatabaseConfig.toJdbc(url)
    val xa = Transactor.fromDriverManager[IO]("org.postgresql.Driver", jdbc, props, None)
    sql"SELECT count(*) FROM information_schema.schemata WHERE schema_name = $name"
      .query[Long]
      .unique
      .transact(xa)
      .map(_ == 1L)

  private def enqueueAndCount(db: Database[IO]): IO[Long] =
    TaskQueue[IO, String](db, "mail").enqueue(NewTask("hello")) *>
      Fragment.const(s"SELECT count(*) FROM ${db.schema("tasks")}").query[Long].unique.transact(db.transactor)

  test("a migrated schema of its own takes tasks at once, and is dropped on release") {
    for
      server <- PostgresServer.shared[IO]
      inside <- TestDatabase.resource[IO]().use { db =>
        (enqueueAndCount(db), schemaExists(server.url, db.schema.name)).mapN((c, e) => (db.schema.name, c, e))
      }
      after <- schemaExists(server.url, inside._1)
    yield
      val (name, count, existed) = inside
      assertEquals((count, existed, after), (1L, true, false))
      assert(name.startsWith(s"weir_test_${ProcessHandle.current().pid()}_"), name)
  }

  test("uses at the same time get different schemas and never see each other's tasks") {
    (TestDatabase.resource[IO](), TestDatabase.resource[IO]()).tupled.use { (a, b) =>
      for
        ca <- enqueueAndCount(a)
        cb <- enqueueAndCount(b)
      yield
        assertNotEquals(a.schema, b.schema)
        assertEquals((ca, cb), (1L, 1L))
    }
  }

  test("on a server of the test's own, the schema is there too") {
    PostgresServer.embedded[IO].use(server => TestDatabase.on(server).use(enqueueAndCount)).map(n =>
      assertEquals(n, 1L)
    )
  }
