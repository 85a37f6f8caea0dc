package weir.lab.durable

import cats.effect.{IO, Ref, Resource}
import doobie.*
import doobie.implicits.*
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres
import weir.postgres.{DatabaseConfig, Schema}

import java.nio.file.Files

/**
 * The server a lab run uses: the one `--url` (or `WEIR_DATABASE_URL`) names, or an embedded PostgreSQL
 * started for the run. Each run works in a schema of its own, dropped at the end.
 *
 * `restart`, for the embedded server only (the lab restarts no server it did not start), stops the
 * server and starts it again on the same port and data directory: every session ends, every commit
 * made before the stop is kept (a fast shutdown writes a checkpoint), and the URL stays valid.
 */
final case class LabDatabase(
    url: String,
    embedded: Boolean,
    schema: Schema,
    restart: Option[IO[Unit]] = None
):
  def config(poolSize: Int = 8): DatabaseConfig = DatabaseConfig(url, schema = schema, poolSize = poolSize)

  /** A plain transactor for the lab's own reads: a new connection for each transaction. */
  lazy val admin: Transactor[IO] =
    val (jdbc, props) = DatabaseConfig.toJdbc(url)
    Transactor.fromDriverManager[IO]("org.postgresql.Driver", jdbc, props, None)

  /** `cio` on [[admin]], retried across a restart ([[Retrying]]): for reads and idempotent statements only. */
  def read[A](what: String)(cio: ConnectionIO[A]): IO[A] = Retrying(what)(cio.transact(admin))

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

  /** The server of `url` (or an embedded one) and a schema `<experiment>_<pid>` of the run's own. */
  def resource(url: Option[String], experiment: String = "lab_durable"): Resource[IO, LabDatabase] =
    val schema = Schema(s"${experiment}_${ProcessHandle.current().pid()}")
    val server = url match
      case Some(u) => Resource.pure[IO, LabDatabase](LabDatabase(u, embedded = false, schema))
      case None => embeddedServer.map((u, restart) => LabDatabase(u, embedded = true, schema, Some(restart)))
    server.flatMap { db =>
      Resource.make(IO.pure(db))(d =>
        Fragment.const(
          s"DROP SCHEMA IF EXISTS ${schema.name} CASCADE"
        ).update.run.transact(d.admin).void.voidError
      )
    }

  /**
   * An embedded server on a port and in a data directory of its own, kept across restarts (EmbeddedPostgres
   * has no restart: its `close` stops the server with `pg_ctl stop -m fast`, and a new instance started on
   * the same port and directory with `setCleanDataDirectory(false)` finds the data and skips `initdb`).
   * The URL, and the action that restarts the server; released, the server is stopped and its data deleted.
   */
  private def embeddedServer: Resource[IO, (String, IO[Unit])] =
    for
      dir <- Resource.make(IO.blocking(Files.createTempDirectory("weir-lab-postgres")))(d =>
        IO.blocking(org.apache.commons.io.FileUtils.deleteDirectory(d.toFile))
      )
      port <- Resource.eval(IO.blocking(freePort()))
      start = IO.blocking(
        EmbeddedPostgres.builder().setPort(port).setDataDirectory(dir).setCleanDataDirectory(false).start()
      )
      current <- Resource.make(start.flatMap(Ref[IO].of))(_.get.flatMap(pg => IO.blocking(pg.close())))
      url <- Resource.eval(current.get.map(_.getJdbcUrl("postgres", "postgres")))
    yield
      // never left stopped: a cancelled restart still starts the server again before it ends
      val restart = IO.uncancelable(_ =>
        current.get.flatMap(pg => IO.blocking(pg.close())) *> start.flatMap(current.set)
      )
      (url, restart)

  /**
   * A port free now. Another process could take it between this check and a restart, which would then
   * fail (the run ends, naming the cause); the port is the server's own for the rest of its life.
   */
  private def freePort(): Int =
    val s = new java.net.ServerSocket(0)
    try s.getLocalPort
    finally s.close()
