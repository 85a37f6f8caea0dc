package weir.console.internal

import java.nio.charset.StandardCharsets.UTF_8
import java.security.{MessageDigest, SecureRandom}
import java.util.HexFormat
import javax.crypto.Mac
import javax.crypto.spec.SecretKeySpec

/**
 * Who may act, without server-side state. Logging in with the admin token sets a session cookie
 * `<nonce>.<mac>`, the nonce signed with the token (HMAC-SHA256), so that only a holder of the token can
 * make one, and changing the token logs every session out. Each session has its own CSRF token, the MAC
 * of the nonce under another label: every form of the session carries it, and an action needs both the
 * cookie and the form's token, so a page of another site, which the browser may send the cookie from but
 * which cannot read ours, cannot act. The cookie is also `SameSite=Strict` and `HttpOnly`.
 */
private[console] final class Access(token: String):

  private val key = new SecretKeySpec(token.getBytes(UTF_8), "HmacSHA256")
  private val random = new SecureRandom()

  private def mac(label: String, nonce: String): String =
    val m = Mac.getInstance("HmacSHA256")
    m.init(key)
    HexFormat.of().formatHex(m.doFinal(s"$label:$nonce".getBytes(UTF_8)))

  /** Whether `given` is the admin token, in time independent of where they differ. */
  def isToken(candidate: String): Boolean = Access.same(candidate, token)

  /** A new session's cookie value. */
  def newSession(): String =
    val bytes = new Array[Byte](16)
    random.nextBytes(bytes)
    val nonce = HexFormat.of().formatHex(bytes)
    s"$nonce.${mac("session", nonce)}"

  /** The session's nonce when `cookie` is a session this token signed. */
  def session(cookie: String): Option[String] = cookie.split('.') match
    case Array(nonce, signature) if Access.same(signature, mac("session", nonce)) => Some(nonce)
    case _ => None

  /** The CSRF token of the session `nonce`. */
  def csrf(nonce: String): String = mac("csrf", nonce)

  def validCsrf(nonce: String, candidate: String): Boolean = Access.same(candidate, csrf(nonce))

private[console] object Access:
  val cookie: String = "weir_console_session"

  private def same(a: String, b: String): Boolean =
    MessageDigest.isEqual(a.getBytes(UTF_8), b.getBytes(UTF_8))
