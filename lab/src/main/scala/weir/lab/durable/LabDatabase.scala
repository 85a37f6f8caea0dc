package weir.lab.durable

import cats.effect.{IO, Resource}
import doobie.*
import doobie.implicits.*
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres
import weir.postgres.{DatabaseConfig, Schema}

/**
 * The server a lab run uses: the one `--url` (or `WEIR_DATABASE_URL`) names, or an embedded PostgreSQL
 * started for the run. Each run works in a schema of its own, dropped at the end.
 */
final case class LabDatabase(url: String, embedded: Boolean, schema: Schema):
  def config(poolSize: Int = 8): DatabaseConfig = DatabaseConfig(url, schema = schema, poolSize = poolSize)

  /** A plain transactor for the lab's own reads. */
  lazy val admin: Transactor[IO] =
    val (jdbc, props) = DatabaseConfig.toJdbc(url)
    Transactor.fromDriverManager[IO]("org.postgresql.Driver", jdbc, props, None)

  /** One connection for a series of short reads (each a transaction of its own), closed when released. */
  def session: Resource[IO, Transactor[IO]] =
    Resource
      .make(IO.blocking {
        val (jdbc, props) = DatabaseConfig.toJdbc(url)
        java.sql.DriverManager.getConnection(jdbc, props)
      })(c => IO.blocking(c.close()))
      .map(c => Transactor.fromConnection[IO](c, None))

  /** Runs `sql` on a connection of its own in autocommit: VACUUM and CREATE DATABASE refuse a transaction. */
  def autocommit(sql: String): IO[Unit] = IO.blocking {
    val (jdbc, props) = DatabaseConfig.toJdbc(url)
    val c = java.sql.DriverManager.getConnection(jdbc, props)
    try c.createStatement().execute(sql): Unit
    finally c.close()
  }

object LabDatabase:

  def resource(url: Option[String]): Resource[IO, LabDatabase] =
    val schema = Schema(s"lab_durable_${ProcessHandle.current().pid()}")
    val server = url match
      case Some(u) => Resource.pure[IO, (String, Boolean)]((u, false))
      case None =>
        Resource
          .make(IO.blocking(EmbeddedPostgres.builder().start()))(pg => IO.blocking(pg.close()))
          .map(pg => (pg.getJdbcUrl("postgres", "postgres"), true))
    server.flatMap { (u, embedded) =>
      val db = LabDatabase(u, embedded, schema)
      Resource.make(IO.pure(db))(d =>
        Fragment.const(
          s"DROP SCHEMA IF EXISTS ${schema.name} CASCADE"
        ).update.run.transact(d.admin).void.voidError
      )
    }
