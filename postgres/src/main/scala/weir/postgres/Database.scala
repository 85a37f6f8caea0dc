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
import weir.postgres.internal.{ActionFaults, ImmediatePeekSocketFactory, Run, Shared, WorkerSession}

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
 * [[Database.transactor]]. The [[DurableWorker]]s of one `Database` share, whatever their number, while
 * any of them runs: a pool of `workerPoolSize` for claims and results, a pool of
 * [[Database.maintenancePoolSize]] for heartbeats, rescues and prunes (so that a busy claim path never
 * delays a heartbeat into a false rescue), and one session (LISTEN for every queue, and the locks that
 * show the workers alive) if any of them listens: `poolSize + workerPoolSize + 3` connections in all.
 * `connectTimeout` bounds the wait for a connection (at least 250 ms; for the worker's session, whole
 * seconds, at least 1).
 *
 * `readTimeout` bounds how long a worker's own connections wait for an answer from the server (whole
 * seconds, at least 1): past it the connection is dropped and the statement retried on a new one. It is
 * what frees a worker from a connection that died without a word, where the kernel would wait many minutes
 * (a network partition, a server host gone, a NAT forgetting the flow); so it must be longer than any of
 * weir's own statements may take, a claim or a batch of results waiting on a lock included. It is also the
 * server's idle timeout of a worker's own transactions, so that one such a connection left open on the
 * server, its commit never sent, does not hold its rows until the server's TCP gives up. It never applies
 * to the connections of [[Database.transactor]]: your transactions take as long as they need.
 *
 * Building or copying a config never throws: [[Database.connect]] and [[Database.migrate]] check it
 * ([[errors]]: the URL, the schema's name, the pool sizes and the timeouts) and fail in `F` with one
 * [[weir.InvalidSettings]] naming every bad value, the URL's password hidden.
 */
final case class DatabaseConfig(
    url: String,
    schema: Schema = Schema.default,
    poolSize: Int = 8,
    workerPoolSize: Int = 4,
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
      Validation.check(workerPoolSize > 0, s"workerPoolSize must be > 0, was: $workerPoolSize") ++
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
 * Where weir's tasks live, and the connections that reach them: either pools weir opens and closes itself
 * ([[Database.connect]], from a [[DatabaseConfig]]) or a pool you own ([[Database.fromDataSource]],
 * [[Database.fromTransactor]]), which weir borrows connections from and never closes. Checked when built:
 * it fails with [[DatabaseUnreachable]] when the server cannot be reached and with [[SchemaError]] when the
 * schema is missing or at a version it cannot run against.
 *
 * Every [[DurableWorker]] started on one `Database` shares its workers' connections: one pool for claims
 * and results, one for heartbeats, rescues and prunes, and one session that listens for every queue and
 * holds the locks that show the workers alive (see `docs/durable.md`, "Connections", for their count).
 * They are opened with the first worker and closed with the last.
 */
final class Database[F[_]] private (
    /** The settings weir opened its pools from; `None` on a pool of yours. */
    val config: Option[DatabaseConfig],
    /** The schema of weir's tables. */
    val schema: Schema,
    /** Your transactions, and weir's enqueues and [[TaskAdmin]]: weir's pool, or yours as you gave it. */
    val transactor: Transactor[F],
    private[postgres] val run: Run[F],
    private[postgres] val readTimeout: FiniteDuration,
    connections: Database.Connections[F],
    private[postgres] val workerPools: Shared[F, Database.WorkerPools[F]],
    private[postgres] val sessions: Shared[F, WorkerSession.Hub[F]],
    private[postgres] val actionFaults: ActionFaults[F]
)(using
    F: Async[F]
):

  /**
   * What this `Database` has ridden out outside its workers (theirs are each [[DurableWorker.stats]]):
   * operators' actions ([[TaskAdmin]], [[Workflows]], [[Batches]]) that the server aborted as deadlocks and
   * that were run again, each also logged once at WARN on the logger `weir.postgres.actions`. Counts since
   * the `Database` was opened; they only grow.
   */
  def stats: F[DatabaseStats] = actionFaults.deadlocksRetried.map(DatabaseStats(_))

  /**
   * A connection held for a long time (the workers' session): outside any pool when weir opened the
   * pools, closed on release; else one of your pool's, given back on release with what the session left
   * on it undone (its LISTENs, its advisory locks, its setting). Fails with [[DatabaseUnreachable]].
   */
  private[postgres] def dedicated: Resource[F, Connection] = connections.session

  /**
   * A small pool for the workers' own bookkeeping, `size` connections (on your pool: yours, whatever
   * `size`), whose commits do not wait for the WAL to reach disk (`synchronous_commit = off`, set for
   * each transaction alone: the sessions keep their settings). Only the workers' own bookkeeping runs on
   * it — claims, results, heartbeats, rescues, prunes — and none of it needs to survive a server crash: a
   * lost claim or rescue leaves the task to be claimed or rescued again, a lost result makes the task run
   * again (at-least-once), so nothing is lost, while each claim and acknowledgement saves a disk flush.
   * Enqueues and [[Job.completeIn]] run in the caller's transactions, with the caller's durability.
   */
  private[postgres] def workerPool(size: Int): Resource[F, Run[F]] = connections.workerRun(size)

  /**
   * The pools every worker of this `Database` shares, opened by the first worker and closed after the
   * last: `workerPoolSize` connections (see [[DatabaseConfig]]) for claims and results, and
   * [[Database.maintenancePoolSize]] for heartbeats, rescues and prunes, so that a busy claim path never
   * delays a heartbeat into a false rescue.
   */
  private[postgres] def sharedWorkerPools: Resource[F, Database.WorkerPools[F]] =
    workerPools.use(
      (workerPool(connections.workerPoolSize), workerPool(Database.maintenancePoolSize))
        .mapN(Database.WorkerPools(_, _))
    )

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
   * A `Database` on connections of your own `dataSource` (a HikariCP pool, a `PGSimpleDataSource`…),
   * which weir borrows and never closes, checked as [[connect]] checks weir's own: everything weir does
   * — enqueues, [[TaskAdmin]], the workers' claims, results, heartbeats, rescues and prunes — runs on
   * connections taken from it and given back, and the workers' session holds one of them for as long as
   * a listening worker runs (see `docs/durable.md`, "Connections").
   *
   * `readTimeout` bounds how long weir's own statements wait for an answer on your connections, as
   * [[DatabaseConfig.readTimeout]] does on its own: set as the connection's network timeout
   * (`setNetworkTimeout`) while weir holds it, and put back before it is given back. TCP keepalives are
   * your pool's setting (pgjdbc's `tcpKeepAlive`).
   *
   * Errors, raised in `F` when the resource is used: [[weir.InvalidSettings]] naming every bad value (a
   * null `dataSource`, a bad schema, a `readTimeout` that is not positive); [[DatabaseUnreachable]] if no
   * connection can be taken from `dataSource`; [[SchemaError]] as for [[connect]], logged as there.
   */
  def fromDataSource[F[_]](
      dataSource: javax.sql.DataSource,
      schema: Schema = Schema.default,
      readTimeout: FiniteDuration = 30.seconds
  )(using
      F: Async[F]
  )(using
      logs: LoggerFactory[F] = NoOpFactory[F]
  ): Resource[F, Database[F]] =
    Validation.resource(
      "Database.fromDataSource",
      Validation.check(dataSource != null, "dataSource must be set, was: null") ++
        borrowedErrors(schema, readTimeout)
    ).flatMap(_ =>
      doobie.util.ExecutionContexts.cachedThreadPool[F].flatMap(connectEC =>
        borrowed(
          Transactor.fromDataSource[F](dataSource, connectEC, None),
          schema,
          readTimeout,
          describe(dataSource)
        )
      )
    )

  /**
   * A `Database` on your doobie `transactor`, whose connections weir borrows as [[fromDataSource]] does
   * a `DataSource`'s (and never closes: the transactor's pool stays yours). [[Database.transactor]] is
   * `transactor` itself; weir's own transactions take connections from it with its `connect`, under
   * weir's own strategy (commit, rollback, `synchronous_commit = off` for the workers' bookkeeping).
   *
   * Errors: as for [[fromDataSource]] (a null `transactor`).
   */
  def fromTransactor[F[_]](
      transactor: Transactor[F],
      schema: Schema = Schema.default,
      readTimeout: FiniteDuration = 30.seconds
  )(using
      F: Async[F]
  )(using
      logs: LoggerFactory[F] = NoOpFactory[F]
  ): Resource[F, Database[F]] =
    Validation.resource(
      "Database.fromTransactor",
      Validation.check(transactor != null, "transactor must be set, was: null") ++
        borrowedErrors(schema, readTimeout)
    ).flatMap(_ => borrowed(transactor, schema, readTimeout, describe(transactor.kernel)))

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

  /** Connections of the pool for heartbeats, rescues and prunes that the workers of a `Database` share. */
  val maintenancePoolSize: Int = 2

  /** The pools the workers of one `Database` share: `claims` for claims and results, `maintenance` for the rest. */
  private[postgres] final case class WorkerPools[F[_]](claims: Run[F], maintenance: Run[F])

  /** How a `Database` opens its workers' connections: pools of its own, or borrowed from the user's. */
  private trait Connections[F[_]]:
    def workerPoolSize: Int
    def workerRun(size: Int): Resource[F, Run[F]]
    def session: Resource[F, Connection]

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

  private def borrowedErrors(schema: Schema, readTimeout: FiniteDuration): List[String] =
    Validation.nested(
      "schema",
      if schema == null then List("schema must be set, was: null") else schema.errors
    ) ++
      Validation.check(
        readTimeout != null && readTimeout > Duration.Zero,
        s"readTimeout must be > 0, was: $readTimeout"
      )

  private def describe(source: Any): String = s"your ${source.getClass.getName}"

  /**
   * A `Database` on the user's `transactor`, checked: reachable (else [[DatabaseUnreachable]] naming
   * `what`), the schema one this release may run against, as [[connect]] checks it.
   */
  private def borrowed[F[_]](
      transactor: Transactor[F],
      schema: Schema,
      readTimeout: FiniteDuration,
      what: String
  )(using F: Async[F], logs: LoggerFactory[F]): Resource[F, Database[F]] =
    val unreachable: PartialFunction[Throwable, Throwable] = {
      case e: SchemaError => e
      case e => DatabaseUnreachable(what, e)
    }
    val timed = borrowing(transactor, Some(readTimeout))
    val connections = new Connections[F]:
      val workerPoolSize: Int = 1
      def workerRun(size: Int): Resource[F, Run[F]] =
        Run.resource(timed.copy(strategy0 = workerStrategy(readTimeout)), s"${schema.name}-worker")
      def session: Resource[F, Connection] =
        timed.connect(timed.kernel).adaptError(unreachable).flatTap(c =>
          Resource.onFinalize(F.blocking(undoSession(c)))
        )
    for
      _ <- Resource.eval(sql"SELECT 1".query[Int].unique.transact(transactor).adaptError(unreachable))
      // weir's own transactions (enqueues, TaskAdmin) are real ones whatever the user's strategy says, and
      // take as long as they need, as on weir's own pool
      run <- Run.resource(borrowing(transactor, None).copy(strategy0 = Strategy.default), schema.name)
      db <- assemble(None, schema, transactor, run, readTimeout, connections)
      _ <- Resource.eval(checkSchema(db, Migrations.current))
    yield db

  private def assemble[F[_]](
      config: Option[DatabaseConfig],
      schema: Schema,
      transactor: Transactor[F],
      run: Run[F],
      readTimeout: FiniteDuration,
      connections: Connections[F]
  )(using F: Async[F], logs: LoggerFactory[F]): Resource[F, Database[F]] =
    (Shared.resource[F, WorkerPools[F]], Shared.resource[F, WorkerSession.Hub[F]]).tupled.map(
      (pools, sessions) =>
        val faults = new ActionFaults[F](logs.getLoggerFromName(ActionFaults.loggerName))
        new Database(config, schema, transactor, run, readTimeout, connections, pools, sessions, faults)
    )

  /**
   * `transactor`'s connections as weir needs them while it holds them, whatever the user's pool sets:
   * in autocommit (weir's single statements and the session commit as they run; its transactions turn it
   * off as doobie's default strategy does), and, with `readTimeout`, answering within it (their network
   * timeout, pgjdbc's socket timeout, which JDBC lets a caller change on an open connection). Both are put
   * back before the connection is given back, so the user's own transactions keep the pool's settings.
   */
  private def borrowing[F[_]](transactor: Transactor[F], readTimeout: Option[FiniteDuration])(using
      F: Async[F]
  ): Transactor[F] =
    val millis = readTimeout.map(_.toMillis.min(Int.MaxValue.toLong).max(1L).toInt)
    transactor.copy(connect0 =
      a =>
        transactor.connect(a).flatTap(c =>
          Resource.make(F.delay {
            val before = (c.getAutoCommit, c.getNetworkTimeout)
            if !before._1 then c.setAutoCommit(true)
            millis.foreach(c.setNetworkTimeout(inPlace, _))
            before
          })((autoCommit, timeout) =>
            F.delay {
              if millis.isDefined then c.setNetworkTimeout(inPlace, timeout)
              if c.getAutoCommit != autoCommit then c.setAutoCommit(autoCommit)
            }.handleError(_ => ())
          )
        )
    )

  /** Runs a task on the calling thread: pgjdbc's network timeout needs no executor of its own. */
  private val inPlace: java.util.concurrent.Executor = _.run()

  /**
   * Undoes on a borrowed connection what a workers' session leaves on it (its LISTENs, its advisory
   * locks, its setting) before it goes back to the user's pool; an error (a connection that died) is
   * left to the pool, which drops a broken connection.
   */
  private def undoSession(c: Connection): Unit =
    try
      if !c.isClosed then
        val st = c.createStatement()
        try st.execute("UNLISTEN *; SELECT pg_advisory_unlock_all(); RESET synchronous_commit"): Unit
        finally st.close()
    catch case _: java.sql.SQLException => ()

  private[postgres] def pool[F[_]](config: DatabaseConfig, worker: Boolean = false)(using
      F: Async[F]
  )(using logs: LoggerFactory[F] = NoOpFactory[F]): Resource[F, Database[F]] =
    // checked when the resource is used, not when it is built: bad settings are an error in F
    Validation.resource("DatabaseConfig", config.errors) *>
      transactorOf(config, worker).flatMap { xa =>
        val connections = new Connections[F]:
          val workerPoolSize: Int = config.workerPoolSize
          def workerRun(size: Int): Resource[F, Run[F]] =
            transactorOf(
              config.copy(poolSize = size),
              worker = true
            ).flatMap(Run.resource(_, config.schema.name))
          def session: Resource[F, Connection] =
            Resource.make(F.blocking(Database.open(config)))(c => F.blocking(c.close()))
        Run.resource(xa, config.schema.name).flatMap(run =>
          assemble(Some(config), config.schema, xa, run, config.readTimeout, connections)
        )
      }

  /** A HikariCP pool to `config`'s database, checked with one query. */
  private def transactorOf[F[_]](config: DatabaseConfig, worker: Boolean)(using
      F: Async[F]
  ): Resource[F, Transactor[F]] =
    Resource.eval(F.delay(hikariConfig(config, worker))).flatMap(hikari =>
      HikariTransactor
        .fromHikariConfig[F](hikari)
        .adaptError { case e => unreachable(config, e) }
        .evalTap(xa =>
          sql"SELECT 1".query[Int].unique.transact(xa).adaptError { case e => unreachable(config, e) }
        )
        .map(xa => if worker then xa.copy(strategy0 = workerStrategy(config.readTimeout)) else xa)
    )

  /**
   * The strategy of the workers' own transactions (claims' results, rescues, prunes, a worker's last step):
   * doobie's default, with two settings, each with `SET LOCAL` so that it ends with the transaction (a
   * session setting would outlive it on the server connection, which PgBouncer in transaction mode hands to
   * other clients):
   *
   *   - first, an idle timeout of `readTimeout` (`idle_in_transaction_session_timeout`). A connection that
   *     goes silent between a statement and its commit (a partition, a failover, a NAT that forgot the flow)
   *     leaves its transaction open on the server, holding the rows it wrote until the server's TCP gives up,
   *     hours by default; every later write of those rows waits on it (the same batch of results written
   *     again on a new connection, so every finish queued behind it, the hand-backs of refused claims
   *     included). With the timeout the server ends that session once it has waited `readTimeout` for its
   *     client, which frees the rows, and the batch written again commits. A live worker sends each
   *     statement of its transactions right after the last: only a pause longer than `readTimeout` ends one,
   *     whose writes are then retried like any failed one. It costs a round trip per transaction.
   *   - at commit, `synchronous_commit = off`: read at commit, so it is sent with the `COMMIT`, as one
   *     statement, which costs no round trip of its own; the driver's commit that follows finds the
   *     transaction already ended and sends nothing.
   */
  private def workerStrategy(readTimeout: FiniteDuration): Strategy =
    val idleMillis = readTimeout.toMillis.min(Int.MaxValue.toLong).max(1L)
    def execute(statement: String): ConnectionIO[Unit] = FC.raw { c =>
      val st = c.createStatement()
      try st.execute(statement): Unit
      finally st.close()
    }
    Strategy.default.copy(
      before = Strategy.default.before *>
        execute(s"SET LOCAL idle_in_transaction_session_timeout = $idleMillis"),
      after = execute("SET LOCAL synchronous_commit = off; COMMIT") *> FC.commit
    )

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
    // HikariCP checks an idle connection before handing it out with `isValid`, which waits its own
    // validationTimeout (5 s) whatever the socket's timeout: a worker's pool whose idle connections all went
    // silent would make a claim wait that long per connection, so the check waits no longer than readTimeout
    if worker then
      hikari.setValidationTimeout(config.readTimeout.toMillis.min(config.connectTimeout.toMillis).max(250L))
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
