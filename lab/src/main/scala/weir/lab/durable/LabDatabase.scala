package weir.lab.durable

import cats.effect.{IO, Resource}
import doobie.*
import doobie.implicits.*
import weir.postgres.{DatabaseConfig, Schema}
import weir.testkit.PostgresServer

/**
 * The server a lab run uses: the one `--url` (or `WEIR_DATABASE_URL`) names, or an embedded PostgreSQL
 * started for the run (weir-testkit's). Each run works in a schema of its own, dropped at the end.
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

  /**
   * Whether `queue` has no task left, read on one connection held as long as the resource: a timed round
   * asks it every few milliseconds, and a connection opened for each read (a TLS handshake and a SCRAM
   * exchange on both sides, a server process started) would spend the cores the timed tasks run on.
   */
  def emptiness(queue: String): Resource[IO, IO[Boolean]] =
    Retrying.resource(s"a session watching queue $queue")(session).map { xa =>
      // Asked of the four partial indexes that lead with the queue and between them hold every live task
      // (available: the claim's or, behind its key, the waiting keys'; running; waiting for parents), each
      // a probe of one range: `tasks` has no index of all its rows by queue, and a plain `queue = $queue`
      // read the whole table whenever the statistics were taken before the round's tasks arrived.
      val tasks = schema("tasks")
      def none(condition: String) =
        Fragment.const(s"NOT EXISTS (SELECT 1 FROM $tasks WHERE queue = ") ++ fr0"$queue" ++
          Fragment.const(s" AND $condition)")
      (Fragment.const("SELECT ") ++
        none("state = 'available' AND (ordering_key IS NULL OR head)") ++ Fragment.const(" AND ") ++
        none("ordering_key IS NOT NULL AND NOT head") ++ Fragment.const(" AND ") ++
        none("state = 'running'") ++ Fragment.const(" AND ") ++
        none("parents_left > 0")).query[Boolean].unique.transact(xa)
    }

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
      case None =>
        PostgresServer.embedded[IO].map(s => LabDatabase(s.url, embedded = true, schema, s.restart))
    server.flatMap { db =>
      Resource.make(IO.pure(db))(d =>
        Fragment.const(
          s"DROP SCHEMA IF EXISTS ${schema.name} CASCADE"
        ).update.run.transact(d.admin).void.voidError
      )
    }
