package weir.console

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import com.comcast.ip4s.*
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.http4s.*
import org.http4s.ember.client.EmberClientBuilder
import org.http4s.headers.{`Content-Length`, `Content-Type`, Cookie}
import org.scalacheck.{Gen, Prop}
import org.typelevel.ci.*
import weir.console.internal.SecurityHeaders
import weir.postgres.Database

import scala.concurrent.duration.*

/**
 * The security headers are on every answer the console gives, whatever the method, path, status and
 * session (a property over generated requests); `HEAD` answers every `GET` route with the GET's status
 * and headers and no body, in process and through a real server.
 */
class ConsoleHeadersSuite extends CatsEffectSuite with ScalaCheckSuite:

  override def munitIOTimeout: Duration = 90.seconds

  /** The routes as mounted at the root, their database and planted rows, and a session and its CSRF token. */
  final case class Setup(
      routes: HttpRoutes[IO],
      db: Database[IO],
      fixture: Planted,
      cookie: String,
      csrf: String
  )

  private val setup = ResourceSuiteLocalFixture(
    "console routes",
    for
      (db, fixture) <- ConsoleDatabase.planted.map(identity)
      routes <- WeirConsole.routes(db, ConsoleOptions(adminToken = Some(ConsoleClient.token)))
      (cookie, csrf) <- Resource.eval(
        ConsoleClient(org.http4s.client.Client.fromHttpApp(
          org.http4s.server.Router("/ops/weir" -> routes).orNotFound
        )).login()
      )
    yield Setup(routes, db, fixture, cookie, csrf)
  )

  override def munitFixtures = List(setup)

  // lets the fixture bind a pair with a tuple pattern in a for comprehension
  extension [A](r: Resource[IO, A])
    private def withFilter(p: A => Boolean): Resource[IO, A] =
      r.evalMap(a => if p(a) then IO.pure(a) else IO.raiseError(new MatchError(a)))

  private val expected: Map[CIString, String] = Map(
    ci"Content-Security-Policy" -> SecurityHeaders.contentSecurityPolicy,
    ci"X-Content-Type-Options" -> "nosniff",
    ci"Referrer-Policy" -> "no-referrer",
    ci"X-Frame-Options" -> "DENY"
  )

  private def missing(r: Response[IO]): Map[CIString, Option[String]] =
    expected.collect {
      case (name, value) if r.headers.get(name).map(_.head.value) != Some(value) =>
        name -> r.headers.get(name).map(_.head.value)
    }

  test("the policy allows nothing inline and no framing") {
    val csp = SecurityHeaders.contentSecurityPolicy
    assert(!csp.contains("unsafe-inline") && !csp.contains("unsafe-eval"), csp)
    assert(csp.contains("frame-ancestors 'none'"), csp)
    assert(csp.contains("script-src 'self'") && csp.contains("style-src 'self'"), csp)
    assert(csp.startsWith("default-src 'none'"), csp)
  }

  private def paths(s: Setup): Gen[String] =
    val ids = Gen.oneOf(s.fixture.all.map(_.toString) ++ Vector("999999", "abc", "0", "-1"))
    val known = Gen.oneOf(
      Gen.const(""),
      Gen.oneOf("fragments/queues", "api/throughput", "api/throughput?queue=emails", "keys", "workers"),
      Gen.oneOf("schedules", "login", "logout", "tasks", "tasks?state=dead", "tasks?state=zombie"),
      Gen.oneOf("queues/emails", "queues/nope", "queues/emails/pause", "queues/emails/resume"),
      Gen.oneOf("queues/emails/limit", "tasks/actions", "assets/console.css", "assets/console.js"),
      Gen.oneOf("assets/uplot/uPlot.min.css", "assets/missing.js"),
      ids.map("tasks/" + _),
      for id <- ids; a <- Gen.oneOf("retry", "cancel", "discard", "explode") yield s"tasks/$id/$a",
      for id <- ids; g <- Gen.oneOf("workflows", "batches"); a <- Gen.oneOf("", "/cancel", "?after=x")
      yield s"$g/$id$a"
    )
    val junk = Gen.listOfN(3, Gen.oneOf("x", "%3Cb%3E", "..", "tasks", "queues", "%00")).map(_.mkString("/"))
    Gen.frequency(9 -> known, 1 -> junk)

  property("every answer carries every security header, whatever the method, path, status and session") {
    val s = setup()
    val requests =
      for
        method <- Gen.oneOf(Method.GET, Method.HEAD, Method.POST)
        path <- paths(s)
        cookie <- Gen.oneOf(None, Some(s.cookie), Some("00.11"))
        csrf <- Gen.oneOf(None, Some(s.csrf), Some("f" * 64))
        form <- Gen.oneOf(Nil, List("max_running" -> "2"), List("action" -> "cancel", "id" -> "999999"))
      yield
        val req = Request[IO](method, Uri.unsafeFromString("/" + path))
          .withEntity(UrlForm((csrf.map("csrf" -> _).toList ++ form)*))
        cookie.fold(req)(c => req.putHeaders(Cookie(RequestCookie(ConsoleClient.cookie, c))))
    Prop.forAll(requests) { req =>
      s.routes(req).value.unsafeRunSync() match
        case None => Prop.passed // not the console's: the host answers it
        case Some(r) =>
          assertEquals(missing(r), Map.empty, s"${req.method} ${req.uri}: ${r.status}")
          Prop.passed
    }
  }

  /** Every GET route, and one of each failing status. */
  private def gets(f: Planted): Vector[String] =
    Vector(
      "",
      "fragments/queues",
      "api/throughput",
      "queues/emails",
      "queues/nope",
      "tasks",
      "tasks?state=zombie",
      s"tasks/${f.dead}",
      "tasks/999999",
      "workflows/999999",
      "workflows/abc",
      "batches/999999",
      "batches/abc",
      "keys",
      "workers",
      "schedules",
      "login",
      "assets/console.css",
      "assets/console.js",
      "assets/uplot/uPlot.min.css",
      "assets/uplot/uPlot.iife.min.js"
    )

  test("HEAD answers every GET route with its status and headers, and no body") {
    val s = setup()
    val client = ConsoleClient(org.http4s.client.Client.fromHttpApp(
      org.http4s.server.Router("/ops/weir" -> s.routes).orNotFound
    ))
    gets(s.fixture).traverse { path =>
      (
        client.send(Request[IO](Method.GET, Uri.unsafeFromString("/ops/weir/" + path))),
        client.head(path)
      ).flatMapN { (get, head) =>
        (get.as[String], head.as[String]).mapN { (getBody, headBody) =>
          assertEquals(head.status, get.status, path)
          assertEquals(headBody, "", path)
          assert(getBody.nonEmpty, path)
          assertEquals(head.headers.get[`Content-Type`], get.headers.get[`Content-Type`], path)
          assertEquals(missing(head), Map.empty, path)
        }
      }
    }.void
  }

  test(
    "a server of the console alone: its own 404 carries the headers, and HEAD sends the length but no body"
  ) {
    val s = setup()
    (
      WeirConsole.server(s.db, ConsoleOptions(), host"127.0.0.1", port"0"),
      EmberClientBuilder.default[IO].build
    ).tupled.use { (server, client) =>
      val base = s"http://127.0.0.1:${server.address.getPort}/"
      def run(method: Method, path: String) =
        client.run(Request[IO](method, Uri.unsafeFromString(base + path)))
          .use(r => r.body.compile.count.map(n => (r, n)))
      for
        nowhere <- run(Method.GET, "no/such/page").map(_._1)
        overview <- run(Method.GET, "").map(_._1)
        scriptRead <- run(Method.GET, "assets/console.js")
        headRead <- run(Method.HEAD, "assets/console.js")
      yield
        val ((script, bytes), (head, headBytes)) = (scriptRead, headRead)
        assertEquals(nowhere.status, Status.NotFound)
        assertEquals(missing(nowhere), Map.empty)
        assertEquals(missing(overview), Map.empty)
        assertEquals((overview.status, script.status, head.status), (Status.Ok, Status.Ok, Status.Ok))
        assertEquals(headBytes, 0L)
        assert(bytes > 0)
        assertEquals(missing(head), Map.empty)
        assertEquals(head.headers.get[`Content-Length`].map(_.length), Some(bytes))
    }
  }
