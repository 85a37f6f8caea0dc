package weir.console

import cats.effect.IO
import cats.syntax.all.*
import munit.CatsEffectSuite
import org.http4s.*
import org.http4s.headers.Location
import weir.console.ConsoleClient.withFilter
import weir.postgres.TaskAdmin

import scala.concurrent.duration.*

/**
 * The operator's actions through http4s' client against a real PostgreSQL: a refused or malformed request
 * answers a 4xx and changes nothing in the database.
 */
class ConsoleActionsSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 90.seconds

  private val token = ConsoleClient.token

  test("read-only: every action is a 403 and changes nothing") {
    ConsoleClient.console(ConsoleOptions.readOnly).use { (client, db, f) =>
      for
        before <- Planted.snapshot(db)
        responses <- Vector(
          client.post("queues/emails/pause", Nil),
          client.post(s"tasks/${f.dead}/retry", Nil),
          client.post("tasks/actions", Seq("action" -> "discard", "id" -> f.dead.toString)),
          client.post("login", Seq("token" -> token))
        ).sequence
        after <- Planted.snapshot(db)
        stillActive <- ConsoleClient.paused(db, "emails")
        (_, page) <- client.get("queues/emails")
      yield
        assertEquals(responses.map(_.status), Vector.fill(4)(Status.Forbidden))
        assertEquals(after, before)
        assert(!stillActive)
        assert(!page.contains("<form method=\"post\""), "no action forms")
    }
  }

  test("an action needs the session and its CSRF token: without either it is a 403 and nothing changes") {
    ConsoleClient.console().use { (client, db, f) =>
      for
        before <- Planted.snapshot(db)
        wrongLogin <- client.post("login", Seq("token" -> "not-the-token"))
        (cookie, csrf) <- client.login()
        noSession <- client.post("queues/emails/pause", Seq("csrf" -> csrf))
        noCsrf <- client.post("queues/emails/pause", Nil, Some(cookie))
        wrongCsrf <- client.post("queues/emails/pause", Seq("csrf" -> ("0" * 64)), Some(cookie))
        forged <- client.post(s"tasks/${f.dead}/retry", Seq("csrf" -> csrf), Some("00.11"))
        after <- Planted.snapshot(db)
        isPaused <- ConsoleClient.paused(db, "emails")
        ok <- client.post("queues/emails/pause", Seq("csrf" -> csrf), Some(cookie))
        nowPaused <- ConsoleClient.paused(db, "emails")
      yield
        assertEquals(wrongLogin.status, Status.Forbidden)
        assert(wrongLogin.cookies.isEmpty)
        assertEquals(
          Vector(noSession, noCsrf, wrongCsrf, forged).map(_.status),
          Vector.fill(4)(Status.Forbidden)
        )
        assertEquals(after, before)
        assert(!isPaused)
        assertEquals(ok.status, Status.SeeOther)
        assertEquals(ok.headers.get[Location].map(_.uri.renderString), Some("../emails?done=paused"))
        assert(nowPaused)
    }
  }

  test("queue controls: pause, resume, limits; a bad limit is a 400 and an unknown queue a 404") {
    ConsoleClient.console().use { (client, db, _) =>
      val admin = TaskAdmin(db)
      for
        (cookie, csrf) <- client.login()
        act = (path: String, form: Seq[(String, String)]) =>
          client.post(path, ("csrf" -> csrf) +: form, Some(cookie))
        paused <- act("queues/emails/pause", Nil).map(_.status)
        resumed <- act("queues/emails/resume", Nil).map(_.status)
        limited <-
          act("queues/emails/limit", Seq("max_running" -> "3", "rate" -> "2.5", "burst" -> "5")).map(_.status)
        set <- admin.overview.queues.map(_.find(_.name == "emails"))
        bad <- act("queues/emails/limit", Seq("max_running" -> "-1"))
        badBody <- bad.as[String]
        burstAlone <- act("queues/emails/limit", Seq("burst" -> "5")).map(_.status)
        unchanged <- admin.overview.queues.map(_.find(_.name == "emails"))
        unknown <- act("queues/nope/pause", Nil).map(_.status)
        cleared <- act("queues/emails/limit", Seq("max_running" -> "", "rate" -> "")).map(_.status)
        none <- admin.overview.queues.map(_.find(_.name == "emails"))
      yield
        assertEquals((paused, resumed, limited), (Status.SeeOther, Status.SeeOther, Status.SeeOther))
        assertEquals(
          set.map(q => (q.paused, q.maxRunning, q.rate.map(r => (r.perSecond, r.burst)))),
          Some((false, Some(3), Some((2.5, 5))))
        )
        assertEquals(bad.status, Status.BadRequest)
        assert(badBody.contains("&#39;-1&#39;"), badBody)
        assertEquals(burstAlone, Status.BadRequest)
        assertEquals(unchanged, set)
        assertEquals(unknown, Status.NotFound)
        assertEquals(cleared, Status.SeeOther)
        assertEquals(none.map(q => (q.maxRunning, q.rate)), Some((None, None)))
    }
  }

  test("a task's actions: retry a dead one, cancel a waiting one, discard; refusals change nothing") {
    ConsoleClient.console().use { (client, db, f) =>
      for
        (cookie, csrf) <- client.login()
        act = (path: String) => client.post(path, Seq("csrf" -> csrf), Some(cookie))
        retried <- act(s"tasks/${f.dead}/retry")
        afterRetry <- Planted.where(db, f.dead)
        again <- act(s"tasks/${f.dead}/retry")
        againBody <- again.as[String]
        unknown <- act("tasks/999999/retry")
        malformed <- act("tasks/abc/cancel")
        cancelled <- act(s"tasks/${f.available(2)}/cancel")
        afterCancel <- Planted.where(db, f.available(2))
        before <- Planted.snapshot(db)
        completedDiscard <- act(s"tasks/${f.completed}/discard")
        unchanged <- Planted.snapshot(db)
        discarded <- act(s"tasks/${f.available(2)}/discard")
        gone <- Planted.where(db, f.available(2))
      yield
        assertEquals(retried.status, Status.SeeOther)
        assertEquals(
          retried.headers.get[Location].map(_.uri.renderString.takeWhile(_ != '?')),
          Some(s"../${f.dead}")
        )
        assertEquals(afterRetry, Some("available"))
        assertEquals(again.status, Status.Conflict)
        assert(againBody.contains("only a dead or cancelled task can be retried"), againBody)
        assertEquals(unknown.status, Status.NotFound)
        assertEquals(malformed.status, Status.BadRequest)
        assertEquals(cancelled.status, Status.SeeOther)
        assertEquals(afterCancel, Some("cancelled"))
        assertEquals(completedDiscard.status, Status.Conflict)
        assertEquals(unchanged, before)
        assertEquals(discarded.status, Status.SeeOther)
        assertEquals(gone, None)
    }
  }

  test(
    "batch actions: each task's outcome; an unknown action or a malformed id is a 400 and changes nothing"
  ) {
    ConsoleClient.console().use { (client, db, f) =>
      for
        (cookie, csrf) <- client.login()
        batch = (form: Seq[(String, String)]) =>
          client.post("tasks/actions", ("csrf" -> csrf) +: form, Some(cookie))
        before <- Planted.snapshot(db)
        badAction <- batch(Seq("action" -> "explode", "id" -> f.dead.toString))
        badId <- batch(Seq("action" -> "cancel", "id" -> f.available.head.toString, "id" -> "x1"))
        noIds <- batch(Seq("action" -> "cancel"))
        unchanged <- Planted.snapshot(db)
        ok <- batch(Seq(
          "action" -> "cancel",
          "id" -> f.available(0).toString,
          "id" -> f.available(2).toString,
          "id" -> "999999"
        ))
        okBody <- ok.as[String]
        states <- f.available.traverse(Planted.where(db, _))
      yield
        assertEquals(
          (badAction.status, badId.status, noIds.status),
          (Status.BadRequest, Status.BadRequest, Status.BadRequest)
        )
        assertEquals(unchanged, before)
        assertEquals(ok.status, Status.Ok)
        assert(okBody.contains(s"${f.available(0)}</a>: cancelled"), okBody)
        assert(okBody.contains("999999</a>: no task 999999"), okBody)
        assertEquals(states, Vector(Some("cancelled"), Some("available"), Some("cancelled")))
    }
  }

  test(
    "sessions: 8 hours by default; after logout the cookie acts no more; the sixth login a minute is a 429"
  ) {
    ConsoleClient.console().use { (client, db, _) =>
      for
        first <- client.post("login", Seq("token" -> token, "operator" -> "ada"))
        cookie = first.cookies.find(_.name == ConsoleClient.cookie).get
        (_, page) <- client.get("", Some(cookie.content))
        csrf = ConsoleClient.csrf(page).get
        out <- client.post("logout", Seq("csrf" -> csrf), Some(cookie.content))
        before <- Planted.snapshot(db)
        revoked <- client.post("queues/emails/pause", Seq("csrf" -> csrf), Some(cookie.content))
        (_, afterPage) <- client.get("", Some(cookie.content))
        isPaused <- ConsoleClient.paused(db, "emails")
        after <- Planted.snapshot(db)
        // one attempt so far from this client (one address, the in-process client's): four more are let through
        more <- (1 to 4).toVector.traverse(_ =>
          client.post("login", Seq("token" -> "wrong-token")).map(_.status)
        )
        throttled <- client.post("login", Seq("token" -> token))
      yield
        assertEquals(cookie.maxAge, Some(8L * 3600))
        assert(page.contains("""<span class="operator">ada</span>"""), page)
        assertEquals(out.status, Status.SeeOther)
        assertEquals(revoked.status, Status.Forbidden)
        assert(afterPage.contains("Log in</a>"), afterPage)
        assert(!isPaused)
        assertEquals(after, before)
        assertEquals(more, Vector.fill(4)(Status.Forbidden))
        assertEquals(throttled.status, Status.TooManyRequests)
        assert(throttled.headers.get(org.typelevel.ci.CIString("Retry-After")).isDefined)
        assert(throttled.cookies.isEmpty)
    }
  }
