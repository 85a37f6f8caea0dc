package weir.console.internal

import cats.data.{Kleisli, OptionT}
import cats.effect.kernel.Async
import org.http4s.{HttpRoutes, Request, Status}
import org.http4s.dsl.Http4sDsl
import weir.console.ConsoleAccess

/**
 * How the console decides what a request may do: its own token login, nobody acts, or the host app's
 * function. [[guard]] asks it once per request and leaves the answer on the request ([[Caller]]) for the
 * routes behind it.
 */
private[console] trait Gate[F[_]]:

  def mode: Caller.Mode

  /** What `req` may do. */
  def access(req: Request[F]): F[ConsoleAccess]

  /** The gate's own routes: logging in and out of the token console; none for the others. */
  def routes: HttpRoutes[F]

private[console] object Gate:

  /** A console without an admin token: everyone reads, no one acts. */
  def readOnly[F[_]](answers: Answers[F])(using F: Async[F]): Gate[F] =
    new Gate[F] with Http4sDsl[F]:
      val mode = Caller.Mode.ReadOnly
      def access(req: Request[F]): F[ConsoleAccess] = F.pure(ConsoleAccess.Read(""))
      val routes = HttpRoutes.of[F] { case req @ (GET | POST) -> Root / "login" =>
        answers.forbidden(req, "This console is read-only: there is nothing to log in to.")
      }

  /** The host app decides with `decide`. */
  def host[F[_]](decide: Request[F] => F[ConsoleAccess])(using F: Async[F]): Gate[F] =
    new Gate[F]:
      val mode = Caller.Mode.Host
      def access(req: Request[F]): F[ConsoleAccess] = decide(req)
      val routes = HttpRoutes.empty[F]

  /**
   * `routes` behind `gate`: each request but an asset's is let through with its [[Caller]], unless the gate
   * denies it (403) or names its operator in a way the console cannot record (500, naming the length).
   */
  def guard[F[_]](gate: Gate[F], csrf: Csrf, answers: Answers[F])(routes: HttpRoutes[F])(using
      F: Async[F]
  ): HttpRoutes[F] =
    Kleisli { (req: Request[F]) =>
      // assets are the same for everyone, and the problem pages need them
      if req.pathInfo.segments.headOption.exists(_.decoded() == "assets") then routes(req)
      else
        OptionT.liftF(gate.access(req)).flatMap { access =>
          val token = access match
            case a: ConsoleAccess.Act => Some(csrf.token(a))
            case _ => None
          problem(access) match
            case Some(detail) =>
              OptionT.liftF(answers.problem(req, Status.InternalServerError, "Access undecided", detail))
            case None if access == ConsoleAccess.Denied =>
              OptionT.liftF(answers.forbidden(req, "You may not see this console."))
            case None => routes(req.withAttribute(Caller.key, Caller(access, token, gate.mode)))
        }
    }

  /** What makes `access` unusable: a name or session too long, or an operator who acts without a name. */
  private def problem(access: ConsoleAccess): Option[String] =
    val max = ConsoleAccess.maxName
    def tooLong(what: String, s: String) =
      Option.when(s.length > max)(s"the access function gave $what of ${s.length} characters (at most $max)")
    access match
      case ConsoleAccess.Denied => None
      case ConsoleAccess.Read(name, session) =>
        tooLong("an operator's name", name).orElse(session.flatMap(tooLong("a session", _)))
      case ConsoleAccess.Act(name, session) =>
        Option.when(name.trim.isEmpty)("the access function let an operator act without a name")
          .orElse(tooLong("an operator's name", name)).orElse(session.flatMap(tooLong("a session", _)))
