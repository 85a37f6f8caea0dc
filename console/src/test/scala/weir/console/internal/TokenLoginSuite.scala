package weir.console.internal

import cats.effect.IO
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import com.comcast.ip4s.*
import munit.CatsEffectSuite
import org.http4s.*
import org.http4s.client.Client
import org.http4s.dsl.io.*
import org.http4s.headers.{`Retry-After`, Cookie}
import org.http4s.implicits.*
import weir.console.ConsoleClient.withFilter
import org.typelevel.ci.*
import weir.console.{ConsoleOptions, ReaderView}

import scala.concurrent.duration.*

/**
 * The console's own login as routes, in virtual time: the session cookie's attributes, a session that acts
 * until exactly its lifetime, logout that revokes, and the throttle's 429 with its exact `Retry-After`.
 * Behind the same [[Gate]] as the console's pages, with one action (`probe`) that answers who acted.
 */
class TokenLoginSuite extends CatsEffectSuite:

  private val token = "the-admin-token"

  private def virtual[A](body: IO[A]): IO[A] = TestControl.executeEmbed(body)

  private def console(options: ConsoleOptions = ConsoleOptions(adminToken = Some(token))): IO[Client[IO]] =
    for
      csrf <- Csrf.random[IO]
      answers = new Answers[IO](csrf, ReaderView.Full)
      sessions <- Sessions[IO](options.sessionLifetime)
      throttle <- LoginThrottle[IO]()
      login = new TokenLogin(token, options, sessions, throttle, answers)
      probe = HttpRoutes.of[IO] { case req @ POST -> Root / "probe" =>
        answers.act(req)((_, who) => Ok(s"${who.operator} ${who.session.getOrElse("")}"))
      }
    yield Client.fromHttpApp(Gate.guard(login, csrf, answers)(login.routes <+> probe).orNotFound)

  private def send(client: Client[IO], req: Request[IO]): IO[(Response[IO], String)] =
    // the body read while the response is open, and kept in a copy that can be read again
    client.run(req).use(r => r.as[String].map(body => (r.withEntity(body).putHeaders(r.headers), body)))

  private def login(
      client: Client[IO],
      form: Seq[(String, String)] = Seq("token" -> token, "operator" -> "ada"),
      secure: Boolean = false,
      headers: Seq[Header.ToRaw] = Nil
  ): IO[Response[IO]] =
    val connection = Request.Connection(
      SocketAddress(ipv4"127.0.0.1", port"8080"),
      SocketAddress(ipv4"10.1.2.3", port"40000"),
      secure
    )
    send(
      client,
      Request[IO](Method.POST, uri"/login").withEntity(UrlForm(form*)).putHeaders(headers*)
        .withAttribute(Request.Keys.ConnectionInfo, connection)
    ).map(_._1)

  private def cookie(r: Response[IO]): ResponseCookie =
    r.cookies.find(_.name == TokenLogin.cookie).getOrElse(fail(s"no session cookie: ${r.status}"))

  /** The CSRF token of the session's pages, from its login page's header. */
  private def csrfOf(client: Client[IO], session: String): IO[String] =
    send(
      client,
      Request[IO](Method.GET, uri"/login").putHeaders(Cookie(RequestCookie(TokenLogin.cookie, session)))
    )
      .map((_, page) =>
        """name="csrf" value="([^"]+)"""".r.findFirstMatchIn(page).map(_.group(1)).getOrElse(
          fail(s"no CSRF token in $page")
        )
      )

  private def act(client: Client[IO], session: String, csrf: String): IO[(Status, String)] =
    send(
      client,
      Request[IO](Method.POST, uri"/probe").withEntity(UrlForm("csrf" -> csrf))
        .putHeaders(Cookie(RequestCookie(TokenLogin.cookie, session)))
    ).map((r, body) => (r.status, body))

  test("the session cookie: HttpOnly, SameSite=Strict, Max-Age the lifetime, 256 random bits") {
    virtual {
      for
        client <- console(ConsoleOptions(adminToken = Some(token), sessionLifetime = 2.hours))
        c <- login(client).map(cookie)
      yield
        assertEquals(c.maxAge, Some(7200L))
        assert(c.httpOnly)
        assertEquals(c.sameSite, Some(SameSite.Strict))
        assert(!c.secure, "a login over plain HTTP from a client reached directly")
        assert(c.content.matches("[0-9a-f]{64}"), c.content)
    }
  }

  test("Secure: over TLS, when told so, or when a trusted proxy says the client used https") {
    virtual {
      val https = Seq[Header.ToRaw](Header.Raw(ci"X-Forwarded-Proto", "https"))
      for
        plain <- console()
        told <- console(ConsoleOptions(adminToken = Some(token), secureCookie = true))
        proxied <- console(ConsoleOptions(adminToken = Some(token), trustProxy = true))
        overTls <- login(plain, secure = true).map(cookie(_).secure)
        forced <- login(told).map(cookie(_).secure)
        untrusted <- login(plain, headers = https).map(cookie(_).secure)
        trusted <- login(proxied, headers = https).map(cookie(_).secure)
        trustedHttp <- login(proxied).map(cookie(_).secure)
      yield assertEquals(
        (overTls, forced, untrusted, trusted, trustedHttp),
        (true, true, false, true, false)
      )
    }
  }

  test("a session acts until exactly its lifetime after the login, and not after") {
    virtual {
      for
        client <- console(ConsoleOptions(adminToken = Some(token), sessionLifetime = 2.hours))
        _ <- IO.sleep(3.minutes)
        session <- login(client).map(cookie(_).content)
        csrf <- csrfOf(client, session)
        _ <- IO.sleep(2.hours - 1.second)
        (lastStatus, lastBody) <- act(client, session, csrf)
        _ <- IO.sleep(1.second)
        (afterStatus, afterBody) <- act(client, session, csrf)
      yield
        assertEquals(lastStatus, Status.Ok)
        assertEquals(lastBody, s"ada ${Sessions.label(session)}")
        assertEquals(afterStatus, Status.Forbidden)
        assert(afterBody.contains("Log in with the admin token to act"), afterBody)
    }
  }

  test("logging out revokes the session: its cookie, kept or copied, acts no more") {
    virtual {
      for
        client <- console()
        session <- login(client).map(cookie(_).content)
        other <- login(client, Seq("token" -> token, "operator" -> "bob")).map(cookie(_).content)
        csrf <- csrfOf(client, session)
        before <- act(client, session, csrf).map(_._1)
        (out, _) <- send(
          client,
          Request[IO](Method.POST, uri"/logout").withEntity(UrlForm("csrf" -> csrf))
            .putHeaders(Cookie(RequestCookie(TokenLogin.cookie, session)))
        )
        (after, why) <- act(client, session, csrf)
        otherCsrf <- csrfOf(client, other)
        bob <- act(client, other, otherCsrf)
      yield
        assertEquals(before, Status.Ok)
        assertEquals(out.status, Status.SeeOther)
        assertEquals(out.cookies.find(_.name == TokenLogin.cookie).map(_.content), Some(""))
        assertEquals(after, Status.Forbidden)
        assert(why.contains("Log in with the admin token"), why)
        assertEquals(bob._1, Status.Ok, "another session goes on")
    }
  }

  test("a name over 200 characters is refused naming its length; no name is 'operator'") {
    virtual {
      for
        client <- console()
        long <- login(client, Seq("token" -> token, "operator" -> "x" * 201))
        body <- long.as[String]
        session <- login(client, Seq("token" -> token)).map(cookie(_).content)
        csrf <- csrfOf(client, session)
        who <- act(client, session, csrf)
      yield
        assertEquals(long.status, Status.BadRequest)
        assert(body.contains("at most 200 characters, was: 201"), body)
        assert(who._2.startsWith("operator "), who._2)
    }
  }

  test("the sixth login within a minute of an address is a 429, right token or not, with the exact wait") {
    virtual {
      for
        client <- console()
        _ <- IO.sleep(1.second)
        wrong <- (1 to 5).toVector.traverse(_ => login(client, Seq("token" -> "wrong-token")).map(_.status))
        _ <- IO.sleep(20500.millis)
        sixth <- login(client)
        sixthBody <- sixth.as[String]
        _ <- IO.sleep(39499.millis)
        stillRefused <- login(client).map(_.status)
        _ <- IO.sleep(1.milli)
        later <- login(client)
      yield
        assertEquals(wrong, Vector.fill(5)(Status.Forbidden))
        assertEquals(sixth.status, Status.TooManyRequests)
        // the window opened at 1 s and ends at 61 s: 39.5 s after the sixth attempt, said as 40
        assertEquals(sixth.headers.get[`Retry-After`].map(_.retry), Some(Right(40L)))
        assert(sixthBody.contains("Too many login attempts from your address: try again in 40 s."), sixthBody)
        assert(sixth.cookies.isEmpty)
        assertEquals(stillRefused, Status.TooManyRequests)
        assertEquals(later.status, Status.SeeOther)
    }
  }

  test("the throttle counts the connection's address, or a trusted proxy's X-Forwarded-For") {
    virtual {
      def from(address: String) = Seq[Header.ToRaw](Header.Raw(ci"X-Forwarded-For", s"203.0.113.9, $address"))
      for
        direct <- console()
        proxied <- console(ConsoleOptions(adminToken = Some(token), trustProxy = true))
        spoofed <- (1 to 6).toVector.traverse(i =>
          login(direct, headers = from(s"198.51.100.$i")).map(_.status)
        )
        distinct <- (1 to 6).toVector.traverse(i =>
          login(proxied, headers = from(s"198.51.100.$i")).map(_.status)
        )
        one <- (1 to 6).toVector.traverse(_ => login(proxied, headers = from("198.51.100.77")).map(_.status))
      yield
        assertEquals(
          spoofed.last,
          Status.TooManyRequests,
          "the header is ignored: one address, the connection's"
        )
        assertEquals(distinct, Vector.fill(6)(Status.SeeOther))
        assertEquals(one.last, Status.TooManyRequests)
    }
  }
