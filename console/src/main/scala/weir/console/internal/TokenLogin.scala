package weir.console.internal

import cats.effect.kernel.Async
import cats.syntax.all.*
import org.http4s.*
import org.http4s.dsl.Http4sDsl
import org.http4s.headers.`Retry-After`
import weir.console.{ConsoleAccess, ConsoleOptions}

import java.nio.charset.StandardCharsets.UTF_8
import java.security.MessageDigest

/**
 * The console's own login: an operator gives the admin token (and a name, recorded with each action) and
 * gets a session ([[Sessions]]) whose cookie lets them act until they log out or it expires. Anyone else
 * reads. Attempts are throttled per client address ([[LoginThrottle]]): beyond the limit a login answers
 * 429 with `Retry-After`, whatever the token.
 *
 * The cookie is `HttpOnly` (no script reads it), `SameSite=Strict` (no other site's page sends it),
 * `Max-Age` the session's lifetime, and `Secure` when the login came over TLS or the options say so.
 */
private[console] final class TokenLogin[F[_]](
    token: String,
    options: ConsoleOptions,
    sessions: Sessions[F],
    throttle: LoginThrottle[F],
    answers: Answers[F]
)(using F: Async[F])
    extends Gate[F]
    with Http4sDsl[F]:
  import answers.{*, given}

  val mode: Caller.Mode = Caller.Mode.OwnLogin

  private def sessionId(req: Request[F]): Option[String] =
    req.cookies.find(_.name == TokenLogin.cookie).map(_.content)

  def access(req: Request[F]): F[ConsoleAccess] =
    sessionId(req).flatTraverse(sessions.find).map(
      _.fold[ConsoleAccess](ConsoleAccess.Read(""))(s => ConsoleAccess.Act(s.operator, Some(s.label)))
    )

  private def isToken(candidate: String): Boolean =
    MessageDigest.isEqual(candidate.getBytes(UTF_8), token.getBytes(UTF_8))

  private def login(req: Request[F]): F[Response[F]] =
    throttle.attempt(RequestOrigin.address(req, options.trustProxy)).flatMap {
      case Left(wait) =>
        val seconds = (wait.toMillis + 999) / 1000
        view(req).map(v =>
          Response[F](Status.TooManyRequests)
            .withEntity(OtherPages.login(
              v,
              Some(s"Too many login attempts from your address: try again in $seconds s.")
            ))
            .putHeaders(`Retry-After`.unsafeFromLong(seconds))
        )
      case Right(()) =>
        req.as[UrlForm].flatMap { form =>
          val name = form.getFirst("operator").map(_.trim).filter(_.nonEmpty).getOrElse("operator")
          if !form.getFirst("token").exists(isToken) then
            view(req).map(v =>
              Response[F](Status.Forbidden).withEntity(OtherPages.login(v, Some("Wrong token.")))
            )
          else if name.length > ConsoleAccess.maxName then
            badRequest(
              req,
              s"a name must have at most ${ConsoleAccess.maxName} characters, was: ${name.length}"
            )
          else
            sessions.open(name).flatMap(session =>
              redirect("./").map(_.addCookie(ResponseCookie(
                TokenLogin.cookie,
                session.id,
                maxAge = Some(options.sessionLifetime.toSeconds),
                secure = options.secureCookie || RequestOrigin.secure(req, options.trustProxy),
                httpOnly = true,
                sameSite = Some(SameSite.Strict)
              )))
            )
        }
    }

  val routes: HttpRoutes[F] = HttpRoutes.of[F] {
    case req @ GET -> Root / "login" => view(req).flatMap(v => Ok(OtherPages.login(v, None)))
    case req @ POST -> Root / "login" => login(req)
    case req @ POST -> Root / "logout" =>
      act(req)((_, _) =>
        sessionId(req).traverse_(sessions.close) *> redirect("./").map(_.removeCookie(TokenLogin.cookie))
      )
  }

private[console] object TokenLogin:
  val cookie: String = "weir_console_session"
