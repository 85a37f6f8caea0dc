package weir.console.internal

import cats.effect.kernel.Async
import cats.syntax.all.*
import org.http4s.*
import org.http4s.dsl.Http4sDsl
import org.http4s.headers.{`Content-Type`, Location}
import weir.console.{ConsoleAccess, ReaderView}

/**
 * What every route of the console shares: who asks ([[Caller]]), the [[View]] a request's page is rendered
 * for, the check every action passes, and the answers that are not a page of their own (a redirect after an
 * action, a problem page with its status).
 */
private[console] final class Answers[F[_]](csrf: Csrf, readers: ReaderView)(using F: Async[F])
    extends Http4sDsl[F]:

  given EntityEncoder[F, Html] =
    EntityEncoder.stringEncoder[F].contramap[Html](_.render)
      .withContentType(`Content-Type`(MediaType.text.html, Charset.`UTF-8`))

  /** Who asks, as the [[Gate]] decided. */
  def caller(req: Request[F]): Caller = req.attributes.lookup(Caller.key).getOrElse(Caller.nobody)

  def view(req: Request[F]): F[View] =
    F.realTimeInstant.map { now =>
      // "/a/b" is two levels down: its links climb one level to reach the root
      val depth = req.pathInfo.renderString.count(_ == '/') - 1
      val root = if depth <= 0 then "./" else "../" * depth
      View(root, caller(req), now, readers)
    }

  /**
   * Runs the action `body` only for an operator who may act and whose form carries their CSRF token;
   * anything else is a 403 and changes nothing.
   */
  def act(req: Request[F])(body: (UrlForm, ConsoleAccess.Act) => F[Response[F]]): F[Response[F]] =
    def refused(detail: String) = forbidden(req, s"$detail Nothing changed.")
    val who = caller(req)
    who.access match
      case operator: ConsoleAccess.Act =>
        req.as[UrlForm].flatMap { form =>
          if form.getFirst("csrf").exists(csrf.valid(operator, _)) then body(form, operator)
          else refused("The form's CSRF token is missing or wrong: reload the page and try again.")
        }
      case _ =>
        who.mode match
          case Caller.Mode.OwnLogin => refused("Log in with the admin token to act.")
          case Caller.Mode.ReadOnly =>
            refused("This console is read-only: it was started without an admin token.")
          case Caller.Mode.Host => refused("Your access to this console is read-only.")

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
