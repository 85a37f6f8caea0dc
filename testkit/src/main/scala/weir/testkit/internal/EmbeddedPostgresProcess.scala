package weir.testkit.internal

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres

import java.nio.file.{Files, Path}
import java.util.Comparator

/**
 * An embedded PostgreSQL server (io.zonky's real binaries) on a port and in a data directory of its own,
 * both kept across restarts. EmbeddedPostgres has no restart of its own: its `close` stops the server with
 * `pg_ctl stop -m fast` (which writes a checkpoint, so every commit is kept), and a new instance started on
 * the same port and directory with `setCleanDataDirectory(false)` finds the data and skips `initdb`.
 *
 * `restart` and `close` are serialized: a restart never overlaps a close, and the server is never left
 * stopped by a restart that was asked for before a close.
 */
private[testkit] final class EmbeddedPostgresProcess private (port: Int, dir: Path, first: EmbeddedPostgres):
  private var current = first
  private var closed = false

  /** The JDBC URL of the server, the same across restarts. */
  val url: String = first.getJdbcUrl("postgres", "postgres")

  /** Stops the server and starts it again on its port and data. */
  def restart(): Unit = synchronized {
    if closed then throw new IllegalStateException(s"the embedded server on port $port was stopped for good")
    current.close()
    current = EmbeddedPostgresProcess.start(port, dir)
  }

  /** Stops the server and deletes its data; a second call does nothing. */
  def close(): Unit = synchronized {
    if !closed then
      closed = true
      try current.close()
      finally EmbeddedPostgresProcess.delete(dir)
  }

private[testkit] object EmbeddedPostgresProcess:

  /** A new server on a free port, in a new temporary directory. */
  def start(): EmbeddedPostgresProcess =
    val dir = Files.createTempDirectory("weir-testkit-postgres")
    try
      val port = freePort()
      new EmbeddedPostgresProcess(port, dir, start(port, dir))
    catch
      case e: Throwable =>
        delete(dir)
        throw e

  /**
   * The JVM's one server, started by the first call, with EmbeddedPostgres's own defaults (its data deleted
   * when it is closed); stopped when the JVM exits.
   */
  lazy val shared: String =
    val pg = EmbeddedPostgres.builder().start()
    sys.addShutdownHook(pg.close()): Unit
    pg.getJdbcUrl("postgres", "postgres")

  private def start(port: Int, dir: Path): EmbeddedPostgres =
    EmbeddedPostgres.builder().setPort(port).setDataDirectory(dir).setCleanDataDirectory(false).start()

  /**
   * A port free now. Another process could take it between this check and a restart, which would then fail
   * naming the cause; the port is the server's own for the rest of its life.
   */
  private def freePort(): Int =
    val s = new java.net.ServerSocket(0)
    try s.getLocalPort
    finally s.close()

  private def delete(dir: Path): Unit =
    if Files.exists(dir) then
      val paths = Files.walk(dir)
      try paths.sorted(Comparator.reverseOrder[Path]()).forEach(p => Files.deleteIfExists(p): Unit)
      finally paths.close()
