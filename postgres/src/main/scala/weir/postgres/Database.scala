package weir.postgres

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import com.zaxxer.hikari.HikariConfig
import doobie.*
import doobie.hikari.HikariTransactor
import doobie.implicits.*
import doobie.util.transactor.Strategy
import org.typelevel.log4cats.LoggerFactory
import org.typelevel.log4cats.noop.NoOpFactory
import weir.Validation
import weir.postgres.internal.{ImmediatePeekSocketFactory, Run}

import java.net.URI
import java.sql.{Connection, DriverManager}
import java.util.Properties
import scala.concurrent.duration.*

/**
 * Where weir's tasks live: a PostgreSQL database and the [[Schema]] in it.
 *
 * `url` is either a JDBC URL (`jdbc:postgresql://host:5432/db?user=u&password=p`) or a libpq-style one
 * (`postgresql://u:p@host:5432/db`, as River and psql take); it is parsed when a pool is opened, not here.
 * `poolSize` connections serve enqueues, [[TaskAdmin]] and the caller's own transactions on
 * [[Database.transactor]]. Each [[DurableWorker]] opens five more of its own: a pool of two for claims and
 * results, a pool of two for heartbeats, rescues and prunes (so that a busy claim path never delays a
 * heartbeat into a false rescue), and one session of its own (LISTEN, and the lock that shows it alive).
 * `connectTimeout` bounds the wait for a connection (at least 250 ms; for the worker's session, whole
 * seconds, at least 1).
 *
 * `readTimeout` bounds how long a worker's own connections wait for an answer from the server (whole
 * seconds, at least 1): past it the connection is dropped and the statement retried on a new one. It is
 * what frees a worker from a connection that died without a word, where the kernel would wait many minutes
 * (a network partition, a server host gone, a NAT forgetting the flow); so it must be longer than any of
 * weir's own statements may take, a claim or a batch of results waiting on a lock included. It never applies
 * to the connections of [[Database.transactor]]: your transactions take as long as they need.
 *
 * Building or copying a config never throws: [[Database.connect]] and [[Database.migrate]] check it
 * ([[errors]]: the URL, the schema's name, the pool size and the timeouts) and fail in `F` with one
 * [[weir.InvalidSettings]] naming every bad value, the URL's password hidden.
 */
final case class DatabaseConfig(
    url: String,
    schema: Schema = Schema.default,
    poolSize: Int = 8,
    connectTimeout: FiniteDuration = 5.seconds,
    readTimeout: FiniteDuration = 30.seconds
):

  /** What is wrong with this config, each bad value named (the URL's password hidden); empty when valid. */
  def errors: List[String] =
    urlErrors ++
      Validation.nested(
        "schema",
        if schema == null then List("schema must be set, was: null") else schema.errors
      ) ++
      Validation.check(poolSize > 0, s"poolSize must be > 0, was: $poolSize") ++
      Validation.check(connectTimeout > Duration.Zero, s"connectTimeout must be > 0, was: $connectTimeout") ++
      Validation.check(readTimeout > Duration.Zero, s"readTimeout must be > 0, was: $readTimeout")

  private def urlErrors: List[String] =
    if url == null then List("database URL must be set, was: null")
    else
      try
        DatabaseConfig.toJdbc(url): Unit
        Nil
      catch case e: IllegalArgumentException => List(e.getMessage)

  private[postgres] lazy val jdbc: (String, Properties) = DatabaseConfig.toJdbc(url)

  /** The URL without its password, for error messages. */
  def redactedUrl: String =
    if url == null then "null"
    else
      url.replaceAll("(?i)(password=)[^&]*", "$1***").replaceAll("(//[^:/@]+:)[^@]*@", "$1***@")

object DatabaseConfig:

  /** `WEIR_DATABASE_URL` from the environment, if set. */
  def fromEnv: Option[DatabaseConfig] =
    sys.env.get("WEIR_DATABASE_URL").filter(_.nonEmpty).map(DatabaseConfig(_))

  /** The JDBC URL and connection properties (user, password) for `url`, in either accepted form. */
  def toJdbc(url: String): (String, Properties) =
    val props = new Properties()
    if url.startsWith("jdbc:postgresql:") then (url, props)
    else if url.startsWith("postgresql://") || url.startsWith("postgres://") then
      val uri =
        try new URI(url)
        catch
          case e: java.net.URISyntaxException =>
            // the exception's own message repeats the whole URL, password included
            throw new IllegalArgumentException(
              s"malformed database URL: ${e.getReason} at index ${e.getIndex}: '${redact(url)}'"
            )
      if uri.getHost == null then
        throw new IllegalArgumentException(s"database URL has no host: '${redact(url)}'")
      Option(uri.getUserInfo).foreach { info =>
        val (user, password) = info.span(_ != ':')
        props.setProperty("user", java.net.URLDecoder.decode(user, "UTF-8")): Unit
        if password.nonEmpty then
          props.setProperty("password", java.net.URLDecoder.decode(password.drop(1), "UTF-8")): Unit
      }
      val port = if uri.getPort < 0 then 5432 else uri.getPort
      val query = Option(uri.getRawQuery).fold("")("?" + _)
      (s"jdbc:postgresql://${uri.getHost}:$port${Option(uri.getRawPath).getOrElse("")}$query", props)
    else
      throw new IllegalArgumentException(
        s"database URL must start with jdbc:postgresql:, postgresql:// or postgres://, was: '${redact(url)}'"
      )

  private def redact(url: String) = DatabaseConfig(url).redactedUrl

/**
 * An open connection pool to weir's schema, checked: [[Database.connect]] fails with
 * [[DatabaseUnreachable]] when the server cannot be reached and with [[SchemaError]] when the schema is
 * missing or at a version it cannot run against.
 */
final class Database[F[_]] private (
    val config: DatabaseConfig,
    val transactor: Transactor[F],
    private[postgres] val run: Run[F]
)(using
    F: Async[F]
):

  /** The schema's name. */
  def schema: Schema = config.schema

  /**
   * A connection of its own, outside any pool (a worker's LISTEN connection): opened on the blocking pool,
   * closed on release. Fails with [[DatabaseUnreachable]].
   */
  private[postgres] def dedicated: Resource[F, Connection] =
    Resource.make(F.blocking(Database.open(config)))(c => F.blocking(c.close()))

  /**
   * A small pool of a worker's own, `size` connections, whose commits do not wait for the WAL to reach
   * disk (`synchronous_commit = off`, set for each transaction alone: the sessions keep their settings).
   * Only the worker's own bookkeeping runs on it — claims, results,
   * heartbeats, rescues, prunes — and none of it needs to survive a server crash: a lost claim or rescue
   * leaves the task to be claimed or rescued again, a lost result makes the task run again (at-least-once),
   * so nothing is lost, while each claim and acknowledgement saves a disk flush. Enqueues and
   * [[Job.completeIn]] run in the caller's transactions, with the caller's durability.
   */
  private[postgres] def workerPool(size: Int): Resource[F, Run[F]] =
    Database.pool(config.copy(poolSize = size), worker = true).map(_.run)

object Database:

  /**
   * Opens a pool to `config`'s database and checks its schema (without changing it: see [[migrate]]).
   *
   * Errors, all raised in `F` when the resource is used: [[weir.InvalidSettings]] naming every bad value of
   * `config` ([[DatabaseConfig.errors]]: a URL of neither accepted form, without a host or malformed, a bad
   * schema name, pool size or timeout); [[DatabaseUnreachable]] (naming the URL, password
   * hidden) if no connection can be made within the connect timeout; [[SchemaError]] if the schema is
   * missing, older than this library's version, or newer with a migration beyond it that is not recorded as
   * compatible with earlier releases (the message names both versions and that migration).
   *
   * Logs, on the logger `weir.postgres.schema` of the `LoggerFactory` in scope (none: nothing is logged): a
   * [[SchemaError]] at ERROR before failing; a newer schema it accepts at WARN, naming both versions.
   */
  def connect[F[_]](config: DatabaseConfig)(using
      F: Async[F]
  )(using
      logs: LoggerFactory[F] = NoOpFactory[F]
  ): Resource[F, Database[F]] =
    pool(config).evalTap(db => checkSchema(db, Migrations.current))

  /**
   * Applies weir's migrations to `config`'s schema (creating it if needed) and returns the versions applied.
   * Idempotent, and safe when several processes run it at once.
   *
   * Errors, raised in `F`: [[weir.InvalidSettings]] for bad settings and [[DatabaseUnreachable]], as for
   * [[connect]]; [[SchemaError]] if the schema is at a version newer than this library knows and
   * [[connect]] would refuse it, logged at ERROR first as [[connect]] logs it (a newer schema that
   * [[connect]] accepts is left as it is: nothing is applied).
   */
  def migrate[F[_]](config: DatabaseConfig)(using
      F: Async[F]
  )(using
      logs: LoggerFactory[F] = NoOpFactory[F]
  ): F[Vector[Int]] =
    pool(config).use(db => logSchemaError(Migrations.migrate(config.schema).transact(db.transactor)))

  /** [[migrate]], then [[connect]]. */
  def migrateAndConnect[F[_]](config: DatabaseConfig)(using
      F: Async[F]
  )(using
      logs: LoggerFactory[F] = NoOpFactory[F]
  ): Resource[F, Database[F]] =
    Resource.eval(migrate(config)) *> connect(config)

  /** The logger of schema mismatches. */
  private val schemaLogger: String = "weir.postgres.schema"

  /**
   * Fails unless `release` may run against `db`'s schema ([[Migrations.Release.check]]): an error logged at
   * ERROR, a newer schema accepted logged at WARN.
   */
  private[postgres] def checkSchema[F[_]](db: Database[F], release: Migrations.Release)(using
      F: Async[F],
      logs: LoggerFactory[F]
  ): F[Unit] =
    logSchemaError(release.check(db.schema).transact(db.transactor)).flatMap(
      _.warning.traverse_(logs.getLoggerFromName(schemaLogger).warn(_))
    )

  private def logSchemaError[F[_], A](fa: F[A])(using F: Async[F], logs: LoggerFactory[F]): F[A] =
    fa.onError { case e: SchemaError =>
      logs.getLoggerFromName(schemaLogger).error(e)(s"weir cannot run against this schema: ${e.getMessage}")
    }

  private[postgres] def pool[F[_]](config: DatabaseConfig, worker: Boolean = false)(using
      F: Async[F]
  ): Resource[F, Database[F]] =
    // checked when the resource is used, not when it is built: bad settings are an error in F
    Validation.resource("DatabaseConfig", config.errors) *>
      Resource.eval(F.delay(hikariConfig(config, worker))).flatMap(hikari =>
        HikariTransactor
          .fromHikariConfig[F](hikari)
          .adaptError { case e => unreachable(config, e) }
          .evalTap(xa =>
            sql"SELECT 1".query[Int].unique.transact(xa).adaptError { case e => unreachable(config, e) }
          )
          .map(xa => if worker then xa.copy(strategy0 = asyncCommitStrategy) else xa)
          .flatMap(xa => Run.resource(xa, config.schema.name).map(run => new Database(config, xa, run)))
      )

  /**
   * doobie's default strategy, except that each transaction commits with `synchronous_commit = off`, set
   * with `SET LOCAL` so that it ends with the transaction: a session setting would outlive it on the
   * server connection, which PgBouncer in transaction mode hands to other clients. The setting is read
   * at commit, so it is sent with the `COMMIT`, as one statement, which costs no round trip of its own;
   * the driver's commit that follows finds the transaction already ended and sends nothing.
   */
  private val asyncCommitStrategy: Strategy =
    Strategy.default.copy(after = FC.raw { c =>
      val st = c.createStatement()
      try st.execute("SET LOCAL synchronous_commit = off; COMMIT"): Unit
      finally st.close()
    } *> FC.commit)

  private def hikariConfig(config: DatabaseConfig, worker: Boolean): HikariConfig =
    val (url, parsed) = config.jdbc
    val props = new Properties()
    props.putAll(parsed)
    if worker then props.putAll(workerProperties(config))
    val hikari = new HikariConfig()
    hikari.setJdbcUrl(url)
    props.setProperty("ApplicationName", "weir")
    hikari.setDataSourceProperties(props)
    hikari.setMaximumPoolSize(config.poolSize)
    hikari.setConnectionTimeout(config.connectTimeout.toMillis.max(250L))
    hikari.setPoolName(s"weir-${config.schema.name}")
    hikari

  /**
   * A worker's own connections: answers awaited at most `readTimeout` (pgjdbc's `socketTimeout`, which
   * also bounds the login), and TCP keepalives, so that an idle session whose peer vanished is found too.
   */
  private def workerProperties(config: DatabaseConfig): Properties =
    val props = new Properties()
    props.setProperty(
      "socketTimeout",
      math.ceil(config.readTimeout.toMillis / 1000.0).toLong.max(1L).toString
    )
    props.setProperty("tcpKeepAlive", "true")
    props

  private[postgres] def open(config: DatabaseConfig): Connection =
    val (url, props) = config.jdbc
    val withTimeout = new Properties()
    withTimeout.putAll(props)
    withTimeout.setProperty("connectTimeout", config.connectTimeout.toSeconds.max(1L).toString)
    withTimeout.putAll(workerProperties(config))
    withTimeout.setProperty("ApplicationName", "weir")
    // a session waits for notifications: see ImmediatePeekSocketFactory (unless the user chose a factory)
    if !url.contains("socketFactory=") && !withTimeout.containsKey("socketFactory") then
      withTimeout.setProperty("socketFactory", classOf[ImmediatePeekSocketFactory].getName): Unit
    try DriverManager.getConnection(url, withTimeout)
    catch case e: java.sql.SQLException => throw unreachable(config, e)

  private def unreachable(config: DatabaseConfig, e: Throwable): Throwable = e match
    case already: DatabaseUnreachable => already
    case e: SchemaError => e
    case e => DatabaseUnreachable(config.redactedUrl, e)

/** No connection could be made to the database at `url` (its password hidden). */
final class DatabaseUnreachable(val url: String, cause: Throwable)
    extends RuntimeException(s"cannot reach the database at $url: ${cause.getMessage}", cause)
