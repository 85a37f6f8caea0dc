package weir.console

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres
import weir.postgres.{Database, DatabaseConfig, Schema}

import java.util.concurrent.atomic.AtomicInteger

/**
 * The server the console's suites read: `WEIR_TEST_DATABASE_URL`, or an embedded PostgreSQL started once
 * per test JVM. Each test gets a migrated schema of its own, dropped after it.
 */
object ConsoleDatabase:

  private lazy val embedded: EmbeddedPostgres =
    val pg = EmbeddedPostgres.builder().start()
    sys.addShutdownHook(pg.close()): Unit
    pg

  lazy val url: String =
    sys.env.get("WEIR_TEST_DATABASE_URL").filter(_.nonEmpty).getOrElse(embedded.getJdbcUrl(
      "postgres",
      "postgres"
    ))

  private val schemas = new AtomicInteger

  /** A migrated schema of its own with the rows of [[Planted]], dropped on release. */
  def planted: Resource[IO, (Database[IO], Planted)] = empty.evalMap(db => Planted.plant(db).map(db -> _))

  /** A migrated schema of its own, without rows, dropped on release. */
  def empty: Resource[IO, Database[IO]] =
    val schema = Schema(s"console_${ProcessHandle.current().pid()}_${schemas.incrementAndGet()}")
    val config = DatabaseConfig(url, schema = schema, poolSize = 4)
    Resource.make(IO.unit)(_ =>
      Fragment.const(s"DROP SCHEMA IF EXISTS ${schema.name} CASCADE").update.run.transact(admin).void
    ) *> Database.migrateAndConnect[IO](config)

  lazy val admin: Transactor[IO] =
    val (jdbc, props) = DatabaseConfig.toJdbc(url)
    Transactor.fromDriverManager[IO]("org.postgresql.Driver", jdbc, props, None)
