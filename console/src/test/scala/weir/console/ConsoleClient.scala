package weir.console

import cats.effect.{IO, Resource}
import org.http4s.*
import org.http4s.client.Client
import org.http4s.headers.Cookie
import org.http4s.server.Router
import munit.Assertions.fail
import weir.postgres.{Database, TaskAdmin}

/** A client of the console's routes mounted at `/ops/weir`, in process, as the route suites use it. */
final class ConsoleClient(val client: Client[IO], headers: Headers = Headers.empty):

  /** This client, sending `more` headers with every request. */
  def withHeaders(more: Header.ToRaw*): ConsoleClient = ConsoleClient(client, headers ++ Headers(more*))

  private def request(method: Method, path: String, cookie: Option[String]): Request[IO] =
    val req = Request[IO](method, Uri.unsafeFromString("/ops/weir/" + path)).putHeaders(headers)
    cookie.fold(req)(c => req.putHeaders(Cookie(RequestCookie(ConsoleClient.cookie, c))))

  /** `req` sent, its body read: a response whose body can be read again. */
  def send(req: Request[IO]): IO[Response[IO]] =
    client.run(req).use(r => r.as[String].map(body => r.withEntity(body).putHeaders(r.headers)))

  def get(path: String, cookie: Option[String] = None): IO[(Status, String)] =
    send(request(Method.GET, path, cookie)).flatMap(r => r.as[String].map(r.status -> _))

  def head(path: String, cookie: Option[String] = None): IO[Response[IO]] =
    send(request(Method.HEAD, path, cookie))

  def post(path: String, form: Seq[(String, String)], cookie: Option[String] = None): IO[Response[IO]] =
    send(request(Method.POST, path, cookie).withEntity(UrlForm(form*)))

  /** Logs in with `token`: the session cookie and the CSRF token its pages carry. */
  def login(token: String = ConsoleClient.token): IO[(String, String)] =
    for
      r <- post("login", Seq("token" -> token))
      _ = if r.status != Status.SeeOther then fail(s"login answered ${r.status}")
      cookie =
        r.cookies.find(_.name == ConsoleClient.cookie).map(_.content).getOrElse(fail("no session cookie"))
      page <- get("", Some(cookie)).map(_._2)
      csrf = ConsoleClient.csrf(page).getOrElse(fail(s"no CSRF token in:\n$page"))
    yield (cookie, csrf)

object ConsoleClient:
  val token = "correct-horse-battery"
  val cookie = "weir_console_session"

  /** The CSRF token a page's forms carry. */
  def csrf(page: String): Option[String] =
    """name="csrf" value="([^"]+)"""".r.findFirstMatchIn(page).map(_.group(1))

  /** A client of the console's routes mounted at `/ops/weir`, over a freshly planted schema. */
  def console(
      options: ConsoleOptions = ConsoleOptions(adminToken = Some(token))
  ): Resource[IO, (ConsoleClient, Database[IO], Planted)] =
    ConsoleDatabase.planted.flatMap { (db, fixture) =>
      WeirConsole.routes(db, options).map(routes =>
        (ConsoleClient(Client.fromHttpApp(Router("/ops/weir" -> routes).orNotFound)), db, fixture)
      )
    }

  /** The same, with access decided by the host's `access`. */
  def hosted(
      options: ConsoleOptions,
      access: Request[IO] => IO[ConsoleAccess]
  ): Resource[IO, (ConsoleClient, Database[IO], Planted)] =
    ConsoleDatabase.planted.flatMap { (db, fixture) =>
      WeirConsole.routes(db, options, access).map(routes =>
        (ConsoleClient(Client.fromHttpApp(Router("/ops/weir" -> routes).orNotFound)), db, fixture)
      )
    }

  def paused(db: Database[IO], queue: String): IO[Boolean] =
    TaskAdmin(db).overview.queues.map(_.find(_.name == queue).exists(_.paused))

  // lets the suites bind a response's parts with a tuple pattern in a for comprehension
  extension [A](io: IO[A])
    def withFilter(p: A => Boolean): IO[A] =
      io.flatMap(a => if p(a) then IO.pure(a) else IO.raiseError(new MatchError(a)))
