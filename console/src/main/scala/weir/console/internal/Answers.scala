package weir.console.internal

import cats.effect.kernel.Async
import cats.syntax.all.*
import org.http4s.*
import org.http4s.dsl.Http4sDsl
import org.http4s.headers.{`Content-Type`, Location}

/**
 * What every route of the console shares: the [[View]] a request's page is rendered for, and the answers
 * that are not a page of their own (a redirect after an action, a problem page with its status).
 */
private[console] final class Answers[F[_]](access: Option[Access])(using F: Async[F]) extends Http4sDsl[F]:

  given EntityEncoder[F, Html] =
    EntityEncoder.stringEncoder[F].contramap[Html](_.render)
      .withContentType(`Content-Type`(MediaType.text.html, Charset.`UTF-8`))

  /** The session's nonce, when the request carries a valid session cookie. */
  def session(req: Request[F]): Option[String] =
    access.flatMap(a => req.cookies.find(_.name == Access.cookie).flatMap(c => a.session(c.content)))

  def view(req: Request[F]): F[View] =
    F.realTimeInstant.map { now =>
      // "/a/b" is two levels down: its links climb one level to reach the root
      val depth = req.pathInfo.renderString.count(_ == '/') - 1
      val root = if depth <= 0 then "./" else "../" * depth
      View(root, access.isDefined, session(req).flatMap(n => access.map(_.csrf(n))), now)
    }

  def redirect(to: String): F[Response[F]] =
    SeeOther().map(_.putHeaders(Location(Uri.unsafeFromString(to))))

  def problem(req: Request[F], status: Status, title: String, detail: String): F[Response[F]] =
    view(req).map(v => Response[F](status).withEntity(OtherPages.problem(v, title, detail)))

  def badRequest(req: Request[F], detail: String): F[Response[F]] =
    problem(req, Status.BadRequest, "Bad request", detail)

  def notFound(req: Request[F], detail: String): F[Response[F]] =
    problem(req, Status.NotFound, "Not found", detail)

  def conflict(req: Request[F], detail: String): F[Response[F]] =
    problem(req, Status.Conflict, "Nothing changed", detail)

  def forbidden(req: Request[F], detail: String): F[Response[F]] =
    problem(req, Status.Forbidden, "Forbidden", detail)

/** A task id in a path or a form: a positive whole number. */
private[console] object TaskId:
  def unapply(s: String): Option[Long] = s.toLongOption.filter(_ > 0)
