package weir.console.internal

import cats.effect.kernel.{Async, Ref}
import cats.syntax.all.*

import java.nio.charset.StandardCharsets.UTF_8
import java.security.{MessageDigest, SecureRandom}
import java.util.HexFormat
import scala.concurrent.duration.*

/**
 * The sessions of operators logged in with the admin token, kept in memory by the process that serves the
 * console. A session's cookie holds only its id, 256 random bits: logging out removes the session, so that
 * its cookie is worth nothing from then on, leaked or not, and each session ends `lifetime` after its
 * login (the cookie's `Max-Age` is the same). A restart logs everyone out.
 *
 * Bounded: at most `max` sessions are kept. A login that finds them all taken drops the expired ones, and
 * if none has expired, the one that would have expired first (the oldest login).
 *
 * Time is the monotonic clock, so a change of the wall clock neither ends nor prolongs a session.
 *
 * Concurrent callers are allowed; each call is one atomic change of the state and never blocks.
 */
private[console] final class Sessions[F[_]] private (
    state: Ref[F, Map[String, Sessions.Session]],
    lifetime: FiniteDuration,
    max: Int
)(using F: Async[F]):
  import Sessions.*

  /** A new session of `operator`, from now until `lifetime` from now. */
  def open(operator: String): F[Session] =
    (F.delay(newId()), F.monotonic).flatMapN { (id, now) =>
      val session = Session(id, operator, label(id), now + lifetime)
      // invariant: at most `max` sessions, every one opened by this store
      state.update { all =>
        val live = if all.size < max then all else all.filter(_._2.expiresAt > now)
        val room = if live.size < max then live else live - live.minBy(_._2.expiresAt)._1
        room.updated(id, session)
      }.as(session)
    }

  /** The session `id`, unless it is unknown, logged out or expired (an expired one is dropped). */
  def find(id: String): F[Option[Session]] =
    F.monotonic.flatMap(now =>
      state.modify { all =>
        all.get(id) match
          case Some(s) if s.expiresAt > now => (all, Some(s))
          case Some(_) => (all - id, None)
          case None => (all, None)
      }
    )

  /** Ends the session `id` now; nothing if there is none. */
  def close(id: String): F[Unit] = state.update(_ - id)

  /** How many sessions are kept, expired ones not dropped yet included. */
  def size: F[Int] = state.get.map(_.size)

private[console] object Sessions:

  /** The most sessions a console keeps. */
  val max: Int = 10000

  /**
   * A logged-in operator: `id` is the cookie's secret; `label`, a digest of it, names the session in the
   * audit log without revealing it; `expiresAt` is on the monotonic clock.
   */
  final case class Session(id: String, operator: String, label: String, expiresAt: FiniteDuration)

  def apply[F[_]: Async](lifetime: FiniteDuration, max: Int = Sessions.max): F[Sessions[F]] =
    Ref.of[F, Map[String, Session]](Map.empty).map(new Sessions(_, lifetime, max))

  private val random = new SecureRandom()

  private def newId(): String =
    val bytes = new Array[Byte](32)
    random.nextBytes(bytes)
    HexFormat.of().formatHex(bytes)

  /** The first 12 hex digits of the id's SHA-256: enough to tell sessions apart, nothing to log in with. */
  def label(id: String): String =
    HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(id.getBytes(UTF_8))).take(12)
