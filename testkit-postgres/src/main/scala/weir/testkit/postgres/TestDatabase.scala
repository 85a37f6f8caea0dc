package weir.testkit.postgres

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import org.typelevel.log4cats.LoggerFactory
import org.typelevel.log4cats.noop.NoOpFactory
import weir.postgres.{Database, DatabaseConfig, Schema}
import weir.testkit.PostgresServer

import java.util.concurrent.atomic.AtomicInteger

/**
 * weir's schema on a test server, for integration tests of code that enqueues, works or administers durable
 * tasks: each use gets a schema of its own, so tests that run at once never see each other's tasks.
 */
object TestDatabase:

  private val schemas = new AtomicInteger

  /**
   * A fresh schema `weir_test_<pid>_<n>` on the JVM's shared server ([[weir.testkit.PostgresServer.shared]]:
   * `WEIR_TEST_DATABASE_URL`, or an embedded server), weir's migrations applied, and a [[Database]] on it
   * with `poolSize` connections for enqueues and your transactions. Released, the pools are closed and the
   * schema is dropped with everything in it.
   */
  def resource[F[_]](poolSize: Int = 4)(using
      F: Async[F]
  )(using
      logs: LoggerFactory[F] = NoOpFactory[F]
  ): Resource[F, Database[F]] =
    Resource.eval(PostgresServer.shared[F]).flatMap(on(_, poolSize))

  /** As [[resource]], on `server`. */
  def on[F[_]](server: PostgresServer[F], poolSize: Int = 4)(using
      F: Async[F]
  )(using
      logs: LoggerFactory[F] = NoOpFactory[F]
  ): Resource[F, Database[F]] =
    Resource.eval(F.delay(freshSchema())).flatMap { schema =>
      val config = DatabaseConfig(server.url, schema = schema, poolSize = poolSize)
      Resource.make(F.unit)(_ => drop(config)) *> Database.migrateAndConnect[F](config)
    }

  private def freshSchema(): Schema =
    Schema(s"weir_test_${ProcessHandle.current().pid()}_${schemas.incrementAndGet()}")

  private def drop[F[_]: Async](config: DatabaseConfig): F[Unit] =
    val (jdbc, props) = DatabaseConfig.toJdbc(config.url)
    val admin = Transactor.fromDriverManager[F]("org.postgresql.Driver", jdbc, props, None)
    Fragment.const(s"DROP SCHEMA IF EXISTS ${config.schema.name} CASCADE").update.run.transact(admin).void
