package weir.console.internal

import org.http4s.{Request, Uri}
import org.typelevel.ci.*

/**
 * Where a request comes from and whether it came over TLS. Behind a reverse proxy the connection is the
 * proxy's: with `trustProxy` the proxy's own headers are believed instead (`X-Forwarded-For`'s last address,
 * the one the proxy appended, and `X-Forwarded-Proto`). Without it they are ignored, since any client can
 * send them.
 */
private[console] object RequestOrigin:

  /** The client's address, as the login throttle counts it; `unknown` when the server does not say. */
  def address[F[_]](req: Request[F], trustProxy: Boolean): String =
    val forwarded =
      if !trustProxy then None
      else
        req.headers.get(ci"X-Forwarded-For")
          .flatMap(_.last.value.split(',').map(_.trim).filter(_.nonEmpty).lastOption)
    forwarded.orElse(req.remoteAddr.map(_.toString)).getOrElse("unknown")

  /** Whether the client reached the console over TLS. */
  def secure[F[_]](req: Request[F], trustProxy: Boolean): Boolean =
    req.isSecure.contains(true) || req.uri.scheme.contains(Uri.Scheme.https) ||
      (trustProxy &&
        req.headers.get(ci"X-Forwarded-Proto").exists(_.last.value.trim.equalsIgnoreCase("https")))
