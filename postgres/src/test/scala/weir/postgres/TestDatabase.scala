package weir.postgres

import cats.effect.{IO, Resource, SyncIO}
import com.zaxxer.hikari.{HikariConfig, HikariDataSource}
import doobie.*
import doobie.implicits.*
import weir.testkit.PostgresServer

import java.util.concurrent.Executors
import java.util.concurrent.atomic.AtomicInteger
import scala.concurrent.ExecutionContext

/**
 * The PostgreSQL server the suites run against: weir-testkit's shared server, the one
 * `WEIR_TEST_DATABASE_URL` names (CI's run against Debian's server), or else an embedded server started once
 * per test JVM and stopped when it exits. Each test gets a schema of its own, so suites never see each
 * other's rows. (weir-testkit-postgres's `TestDatabase` depends on this module, so its suites cannot use it.)
 *
 * The build runs this module's suites in two JVMs at once. Each has an embedded server of its own; on an
 * external server each works in a database of its own, so that what one JVM's tests leave on the server
 * ([[leftovers]]: sessions, advisory locks) is never counted against the other's.
 */
object TestDatabase:

  private lazy val server: PostgresServer[SyncIO] = PostgresServer.shared[SyncIO].unsafeRunSync()

  /** The URL the suites use: the embedded server's, or on an external server this JVM's own database's. */
  lazy val url: String = if server.embedded then server.url else OwnDatabase.on(server.url)

  /** Which server the suites use, for the test log. */
  def describe: String = if server.embedded then "embedded" else "external"

  private val schemas = new AtomicInteger

  /** A fresh, unmigrated schema name. */
  def freshSchema(): Schema = Schema(s"t${ProcessHandle.current().pid()}_${schemas.incrementAndGet()}")

  def config(schema: Schema): DatabaseConfig = DatabaseConfig(url, schema = schema, poolSize = 4)

  /** A migrated schema of its own and a pool to it. */
  def migrated: Resource[IO, Database[IO]] =
    val c = config(freshSchema())
    Database.migrateAndConnect[IO](c)

  /**
   * A plain transactor outside weir's pools, for checks and planted rows, on a small pool of its own (kept
   * until the JVM exits): a test's waits probe every few tens of milliseconds, and a session opened for each
   * probe costs the server a process and, on a server that offers TLS, both sides a handshake.
   */
  lazy val admin: Transactor[IO] =
    val (jdbc, props) = DatabaseConfig.toJdbc(url)
    val config = new HikariConfig()
    config.setPoolName("weir-test-admin")
    config.setJdbcUrl(jdbc)
    config.setDataSourceProperties(props)
    config.setMinimumIdle(1)
    config.setMaximumPoolSize(8)
    val pool = new HikariDataSource(config)
    sys.addShutdownHook(pool.close()): Unit
    val connecting = Executors.newCachedThreadPool { (r: Runnable) =>
      val t = new Thread(r, "weir-test-admin-connect")
      t.setDaemon(true)
      t
    }
    Transactor.fromDataSource[IO](pool, ExecutionContext.fromExecutor(connecting))

  /**
   * What weir left in this JVM's database: advisory locks held, and connections with weir's application name
   * other than the checking one.
   */
  def leftovers: IO[(Long, Long)] =
    sql"""SELECT (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'
                    AND database = (SELECT oid FROM pg_database WHERE datname = current_database())),
                 (SELECT count(*) FROM pg_stat_activity WHERE application_name = 'weir'
                    AND datname = current_database() AND pid <> pg_backend_pid())"""
      .query[(Long, Long)]
      .unique
      .transact(admin)

  /**
   * A session of its own in a transaction that is never committed, and its server process id: ending that
   * session (`pg_terminate_backend`) is what the server sees when a process dies inside a transaction.
   */
  def doomed: Resource[IO, (Transactor[IO], Int)] =
    session.evalMap((xa, _) =>
      sql"SELECT pg_backend_pid()".query[Int].unique.transact(xa).map(pid => (xa, pid))
    )

  /**
   * A session of its own, outside any pool, in a transaction its user ends (`commit` or `rollback` on the
   * connection): the transactor runs statements in it and commits nothing.
   */
  def session: Resource[IO, (Transactor[IO], java.sql.Connection)] =
    Resource
      .make(IO.blocking {
        val (jdbc, props) = DatabaseConfig.toJdbc(url)
        java.sql.DriverManager.getConnection(jdbc, props)
      })(c => IO.blocking(c.close()))
      .evalMap(c =>
        IO.blocking(c.setAutoCommit(false))
          .as((Transactor.fromConnection[IO](c, None).copy(strategy0 = util.transactor.Strategy.void), c))
      )

  /** Drops a test's schema with everything in it. */
  def drop(schema: Schema): IO[Unit] =
    Fragment.const(s"DROP SCHEMA IF EXISTS ${schema.name} CASCADE").update.run.transact(admin).void
