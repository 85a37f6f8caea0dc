package weir.lab.durable

import cats.effect.{IO, Resource}
import weir.postgres.DatabaseUnreachable

import java.sql.{SQLException, SQLTransientConnectionException}
import scala.concurrent.duration.*

/**
 * How the lab's own database calls ride out a server restart, as weir's worker does: a call that fails
 * because the connection or the server went away is tried again, after 50 ms, then twice as long each
 * time up to 1 s, until `limit` has passed since its first failure; then it fails with [[Retrying.Outage]].
 * Any other error fails at once.
 *
 * Only calls that may run twice are retried: reads, `CREATE … IF NOT EXISTS`, and writes made idempotent by
 * their caller. A write whose commit was sent just as the server went away may have committed without
 * its answer arriving; retried, it would commit twice.
 */
object Retrying:

  /** How long a call keeps retrying: longer than a restart, short enough to end a run whose server is gone. */
  val limit: FiniteDuration = 60.seconds

  /** The server did not answer `what` for `limit`; `cause` is the last failure. */
  final class Outage(val what: String, val limit: FiniteDuration, cause: Throwable)
      extends RuntimeException(
        s"the database did not come back within ${limit.toSeconds} s ($what): ${Retrying.firstLine(cause)}",
        cause
      )

  /**
   * Whether `e` says the connection or the server went away: pgjdbc's connection errors (SQLSTATE class
   * 08), a server shutting down or starting up (57P01–57P03), a pool that found no live connection in
   * time, an I/O error under any of them, or weir's [[DatabaseUnreachable]].
   */
  def transient(e: Throwable): Boolean =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(10).exists {
      case _: DatabaseUnreachable | _: SQLTransientConnectionException | _: java.io.IOException => true
      case s: SQLException =>
        Option(s.getSQLState).exists(st => st.startsWith("08") || st.startsWith("57P"))
      case _ => false
    }

  /** `io`, retried while it fails with a [[transient]] error, for at most `limit` after its first failure. */
  def apply[A](what: String, limit: FiniteDuration = limit)(io: IO[A]): IO[A] =
    def attempt(since: Option[FiniteDuration], delay: FiniteDuration): IO[A] =
      io.handleErrorWith {
        case e if transient(e) =>
          IO.monotonic.flatMap { now =>
            val first = since.getOrElse(now)
            if now - first >= limit then IO.raiseError(new Outage(what, limit, e))
            else IO.sleep(delay) *> attempt(Some(first), (delay * 2).min(1.second))
          }
        case e => IO.raiseError(e)
      }
    attempt(None, 50.millis)

  /** `r`'s acquisition retried as [[apply]] does (a pool or a session opened while the server is down). */
  def resource[A](what: String, limit: FiniteDuration = limit)(r: Resource[IO, A]): Resource[IO, A] =
    Resource.applyFull(poll => apply(what, limit)(poll(r.allocated)).map((a, release) => (a, _ => release)))

  /** The first line of `e`'s message, or its class's name when it has none. */
  def firstLine(e: Throwable): String =
    Option(e.getMessage).flatMap(_.linesIterator.nextOption()).filter(_.nonEmpty)
      .getOrElse(e.getClass.getSimpleName)
