package weir.console

import cats.effect.{IO, Ref}
import cats.syntax.all.*
import munit.CatsEffectSuite
import org.http4s.*
import org.typelevel.ci.*
import weir.InvalidSettings
import weir.console.ConsoleClient.withFilter

import scala.concurrent.duration.*

/**
 * Access decided by the host app's function, against a real PostgreSQL: denied, read and act, the CSRF
 * token bound to the operator, what the host's function may not say, and what readers see with
 * [[ReaderView.Summary]] (in the host's console and the token console).
 */
class ConsoleAccessSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 90.seconds

  /** The host's rule in these tests: the `X-User` header says `name:act`, `name:read`, or `name:fail`. */
  private def byHeader(req: Request[IO]): IO[ConsoleAccess] =
    req.headers.get(ci"X-User").map(_.head.value.split(':').toList) match
      case Some(List(name, "act")) => IO.pure(ConsoleAccess.Act(name, Some(s"host-session-$name")))
      case Some(List(name, "read")) => IO.pure(ConsoleAccess.Read(name))
      case Some(List(name, "fail")) =>
        IO.raiseError(new RuntimeException(s"the host's store is down for $name"))
      case Some(List("", "nameless")) => IO.pure(ConsoleAccess.Act(" "))
      case _ => IO.pure(ConsoleAccess.Denied)

  private def as(client: ConsoleClient, who: String) = client.withHeaders(Header.Raw(ci"X-User", who))

  test("denied: every page and action is a 403, the assets are served") {
    ConsoleClient.hosted(ConsoleOptions(), byHeader).use { (client, db, f) =>
      for
        before <- Planted.snapshot(db)
        pages <-
          Vector("", "tasks", s"tasks/${f.dead}", "fragments/queues", "api/throughput", "keys", "login")
            .traverse(p => client.get(p).map(_._1))
        action <- client.post(s"tasks/${f.dead}/retry", Nil).map(_.status)
        (asset, _) <- client.get("assets/console.css")
        after <- Planted.snapshot(db)
      yield
        assertEquals(pages, Vector.fill(7)(Status.Forbidden))
        assertEquals(action, Status.Forbidden)
        assertEquals(asset, Status.Ok)
        assertEquals(after, before)
    }
  }

  test("read: pages with the reader's name, no action forms, every action a 403 that changes nothing") {
    ConsoleClient.hosted(ConsoleOptions(), byHeader).use { (client, db, f) =>
      val reader = as(client, "rita:read")
      for
        before <- Planted.snapshot(db)
        (status, page) <- reader.get("queues/emails")
        (_, task) <- reader.get(s"tasks/${f.dead}")
        refused <- reader.post(s"tasks/${f.dead}/retry", Nil)
        why <- refused.as[String]
        (login, _) <- reader.get("login")
        after <- Planted.snapshot(db)
      yield
        assertEquals(status, Status.Ok)
        assert(
          page.contains("""<span class="operator">rita</span> <span class="badge">read-only</span>"""),
          page
        )
        assert(!page.contains("<form method=\"post\""), page)
        assert(page.contains("Read-only: your access does not let you act."), page)
        assert(task.contains(Planted.password), "a full view by default")
        assertEquals(refused.status, Status.Forbidden)
        assert(why.contains("Your access to this console is read-only. Nothing changed."), why)
        assertEquals(login, Status.NotFound, "the host logs its users in")
        assertEquals(after, before)
    }
  }

  test("act: the operator's CSRF token is needed, and another operator's does not do") {
    ConsoleClient.hosted(ConsoleOptions(), byHeader).use { (client, db, f) =>
      val ada = as(client, "ada:act")
      val bob = as(client, "bob:act")
      for
        (_, adaPage) <- ada.get("queues/emails")
        (_, bobPage) <- bob.get("queues/emails")
        adaCsrf = ConsoleClient.csrf(adaPage).get
        bobCsrf = ConsoleClient.csrf(bobPage).get
        none <- ada.post("queues/emails/pause", Nil).map(_.status)
        others <- ada.post("queues/emails/pause", Seq("csrf" -> bobCsrf)).map(_.status)
        readerWithToken <-
          as(client, "ada:read").post("queues/emails/pause", Seq("csrf" -> adaCsrf)).map(_.status)
        stillActive <- ConsoleClient.paused(db, "emails")
        done <- ada.post("queues/emails/pause", Seq("csrf" -> adaCsrf)).map(_.status)
        nowPaused <- ConsoleClient.paused(db, "emails")
        retried <- ada.post(s"tasks/${f.dead}/retry", Seq("csrf" -> adaCsrf)).map(_.status)
      yield
        assert(adaPage.contains("""<span class="operator">ada</span>"""), adaPage)
        assert(!adaPage.contains("Log out"), "the host logs its users out")
        assertNotEquals(adaCsrf, bobCsrf)
        assertEquals((none, others, readerWithToken), (Status.Forbidden, Status.Forbidden, Status.Forbidden))
        assert(!stillActive)
        assertEquals((done, retried), (Status.SeeOther, Status.SeeOther))
        assert(nowPaused)
    }
  }

  test(
    "the host's function is asked once per request, never for an asset; its error and a nameless operator are 500s"
  ) {
    Ref[IO].of(0).flatMap { asked =>
      val counting = (req: Request[IO]) => asked.update(_ + 1) *> byHeader(req)
      ConsoleClient.hosted(ConsoleOptions(), counting).use { (client, _, _) =>
        for
          _ <- as(client, "ada:read").get("tasks")
          _ <- as(client, "ada:read").get("assets/console.js")
          _ <- as(client, "ada:read").head("keys")
          n <- asked.get
          failed <- as(client, "ada:fail").get("").attempt
          (nameless, why) <- as(client, ":nameless").get("")
          (long, longWhy) <- as(client, s"${"x" * 201}:read").get("")
        yield
          assertEquals(n, 2)
          // in process, the client hands over the route's error; a server answers it with a 500
          assertEquals(failed.left.map(_.getMessage), Left("the host's store is down for ada"))
          assertEquals(nameless, Status.InternalServerError)
          assert(why.contains("the access function let an operator act without a name"), why)
          assertEquals(long, Status.InternalServerError)
          assert(longWhy.contains("an operator&#39;s name of 201 characters (at most 200)"), longWhy)
      }
    }
  }

  test("an admin token beside the host's function is refused naming it") {
    ConsoleDatabase.empty.use { db =>
      WeirConsole.routes(db, ConsoleOptions(adminToken = Some("12345678")), byHeader).use_.attempt.map {
        case Left(e: InvalidSettings) =>
          assert(e.getMessage.contains("adminToken is for the console's own login"), e.getMessage)
        case other => fail(s"not refused: $other")
      }
    }
  }

  test(
    "ReaderView.Summary: readers see states and counts, no payload, header or error text, and cannot search"
  ) {
    val summary = ConsoleOptions(readers = ReaderView.Summary)
    ConsoleClient.hosted(summary, byHeader).use { (client, _, f) =>
      val reader = as(client, "rita:read")
      for
        (_, dead) <- reader.get(s"tasks/${f.dead}")
        (_, traced) <- reader.get(s"tasks/${f.available.head}")
        (_, list) <- reader.get("tasks")
        (search, why) <- reader.get("tasks?text=hunter")
        (_, overview) <- reader.get("")
        (_, operatorView) <- as(client, "ada:act").get(s"tasks/${f.dead}")
      yield
        assert(dead.contains("""<span class="state state-dead">dead</span>"""), dead)
        assert(!dead.contains(Planted.password) && !dead.contains("eve@example.org"), dead)
        assert(!dead.contains("smtp.example.org") && !dead.contains("IOException"), dead)
        assert(dead.contains("attempt 2 · 2026-01-01T10:01:00Z"), "the attempts, without their errors")
        assert(!traced.contains(Planted.traceId), traced)
        assert(!list.contains("ada@example.org") && !list.contains("name=\"text\""), list)
        assertEquals(f.all.count(id => list.contains(s"""data-task="$id"""")), f.all.size)
        assertEquals(search, Status.BadRequest)
        assert(why.contains("searching payload text is not open to readers"), why)
        assert(overview.contains("""<tr data-queue="emails">"""), overview)
        assert(
          operatorView.contains(Planted.password) && operatorView.contains("smtp.example.org"),
          "operators see all"
        )
    }
  }

  test("ReaderView.Summary in the token console: hidden until the operator logs in") {
    ConsoleClient.console(ConsoleOptions(
      adminToken = Some(ConsoleClient.token),
      readers = ReaderView.Summary
    ))
      .use { (client, _, f) =>
        for
          (_, anonymous) <- client.get(s"tasks/${f.dead}")
          (cookie, _) <- client.login()
          (_, loggedIn) <- client.get(s"tasks/${f.dead}", Some(cookie))
        yield
          assert(!anonymous.contains(Planted.password), anonymous)
          assert(loggedIn.contains(Planted.password), loggedIn)
      }
  }
