package weir.console.internal

import cats.Functor
import cats.data.Kleisli
import org.http4s.{Header, Headers, Http, Response}
import org.http4s.headers.`Cache-Control`
import org.http4s.CacheDirective
import org.typelevel.ci.*

/**
 * The headers every answer of the console carries, whatever its status. The policy allows scripts, styles,
 * images and fetches from the console's own origin only, so that no page runs inline code (a script or a
 * style attribute injected past the escaping would be refused by the browser); forms post to the console
 * only; and no other site may frame a page (`frame-ancestors`, with `X-Frame-Options` for browsers that
 * predate it), which would let it trick an operator into clicking an action. `nosniff` keeps a browser from
 * reading a fragment or a JSON series as something else; `no-referrer` keeps queue names, filters and task
 * ids of the console's URLs out of other sites' logs. Pages carry payloads and the session's CSRF token, so
 * they are not stored by any cache (`no-store`); assets keep the cache time their route sets.
 */
private[console] object SecurityHeaders:

  val contentSecurityPolicy: String =
    Vector(
      "default-src 'none'",
      "script-src 'self'",
      "style-src 'self'",
      "img-src 'self'",
      "connect-src 'self'",
      "form-action 'self'",
      "frame-ancestors 'none'",
      "base-uri 'none'"
    ).mkString("; ")

  val all: Headers = Headers(
    Header.Raw(ci"Content-Security-Policy", contentSecurityPolicy),
    Header.Raw(ci"X-Content-Type-Options", "nosniff"),
    Header.Raw(ci"Referrer-Policy", "no-referrer"),
    Header.Raw(ci"X-Frame-Options", "DENY")
  )

  private val noStore = `Cache-Control`(CacheDirective.`no-store`)

  /** `http` with these headers on every answer it gives, and `no-store` on those that set no cache time. */
  def apply[G[_]: Functor, F[_]](http: Http[G, F]): Http[G, F] =
    Kleisli(req => Functor[G].map(http(req))(secured))

  private def secured[F[_]](r: Response[F]): Response[F] =
    val withCache = if r.headers.get[`Cache-Control`].isDefined then r else r.putHeaders(noStore)
    withCache.putHeaders(all)
