package weir.console.internal

import cats.effect.kernel.Sync
import weir.console.ConsoleAccess

import java.nio.charset.StandardCharsets.UTF_8
import java.security.{MessageDigest, SecureRandom}
import java.util.HexFormat
import javax.crypto.Mac
import javax.crypto.spec.SecretKeySpec

/**
 * The CSRF tokens of the forms that act: the HMAC-SHA256 of the operator's name and session under a key
 * drawn at random when the routes start. Every form of an operator's pages carries the token, and an action
 * needs it beside whatever the request's access rests on (a session cookie, the host's own): a page of
 * another site may make the browser send the cookie, but it cannot read our pages, so it has no token. The
 * token is bound to the operator, so one operator's token does not act for another, and to this process, so
 * a restart voids the tokens of the pages open before it (reload the page).
 */
private[console] final class Csrf private (key: SecretKeySpec):

  def token(access: ConsoleAccess.Act): String =
    val mac = Mac.getInstance("HmacSHA256")
    mac.init(key)
    // the NUL keeps ("ab", "c") and ("a", "bc") apart
    val message = s"csrf\u0000${access.operator}\u0000${access.session.getOrElse("")}"
    HexFormat.of().formatHex(mac.doFinal(message.getBytes(UTF_8)))

  /** Whether `candidate` is `access`'s token, in time independent of where they differ. */
  def valid(access: ConsoleAccess.Act, candidate: String): Boolean =
    MessageDigest.isEqual(candidate.getBytes(UTF_8), token(access).getBytes(UTF_8))

private[console] object Csrf:
  def random[F[_]](using F: Sync[F]): F[Csrf] =
    F.delay {
      val bytes = new Array[Byte](32)
      new SecureRandom().nextBytes(bytes)
      new Csrf(new SecretKeySpec(bytes, "HmacSHA256"))
    }
