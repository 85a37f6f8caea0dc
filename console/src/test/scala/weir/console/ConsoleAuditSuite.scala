package weir.console

import cats.effect.IO
import cats.syntax.all.*
import munit.CatsEffectSuite
import org.http4s.*
import org.typelevel.ci.*
import weir.console.ConsoleClient.withFilter
import weir.console.internal.Sessions
import weir.postgres.{AuditAction, AuditLog, AuditOutcome, Database, Operator}

import scala.concurrent.duration.*

/**
 * The audit log through the console, against a real PostgreSQL: each action recorded as the operator's who
 * took it, a refused request recording nothing (and an action that did not apply recorded as refused), the
 * audit page's filters and keyset pages, and a task page's own entries.
 */
class ConsoleAuditSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 90.seconds

  import AuditAction.*, AuditOutcome.*

  /** `(operator, action, queue, task, outcome, detail)` of every entry, oldest first. */
  private def log(db: Database[IO]) =
    AuditLog(db).entries(limit = 1000).map(_.reverse.map(e =>
      (e.operator, e.action, e.queue, e.task, e.outcome, e.detail)
    ))

  private def ids(page: String, attribute: String) =
    s"""$attribute="(\\d+)"""".r.findAllMatchIn(page).map(_.group(1).toLong).toVector

  test("each action is recorded as the logged-in operator's, with their session, target and outcome") {
    ConsoleClient.console().use { (client, db, f) =>
      for
        login <- client.post("login", Seq("token" -> ConsoleClient.token, "operator" -> "ada"))
        cookie = login.cookies.find(_.name == ConsoleClient.cookie).get.content
        (_, page) <- client.get("queues/emails", Some(cookie))
        csrf = ConsoleClient.csrf(page).get
        act = (path: String, form: Seq[(String, String)]) =>
          client.post(path, ("csrf" -> csrf) +: form, Some(cookie)).map(_.status)
        statuses <- Vector(
          act("queues/emails/pause", Nil),
          act("queues/emails/resume", Nil),
          act("queues/emails/limit", Seq("max_running" -> "3", "rate" -> "2", "burst" -> "4")),
          act(s"tasks/${f.dead}/retry", Nil),
          act(s"tasks/${f.available(2)}/cancel", Nil),
          act(s"tasks/${f.available(2)}/discard", Nil),
          act(s"tasks/${f.completed}/retry", Nil),
          act("tasks/actions", Seq("action" -> "cancel", "id" -> f.available(0).toString, "id" -> "999999"))
        ).sequence
        entries <- log(db)
      yield
        assertEquals(
          statuses,
          Vector.fill(6)(Status.SeeOther) ++ Vector(Status.Conflict, Status.Ok)
        )
        val ada = Operator("ada", Some(Sessions.label(cookie)))
        val emails = Some("emails")
        assertEquals(
          entries,
          Vector(
            (ada, Pause, emails, None, Done, None),
            (ada, Resume, emails, None, Done, None),
            (ada, Limits, emails, None, Done, Some("max running: 3; rate: 2.0/s, burst 4")),
            (ada, Retry, emails, Some(f.dead), Done, None),
            (ada, Cancel, emails, Some(f.available(2)), Done, Some("requested by ada")),
            (ada, Discard, emails, Some(f.available(2)), Done, None),
            (
              ada,
              Retry,
              Some("reports"),
              Some(f.completed),
              Refused,
              Some("the task is completed: only a dead or cancelled task can be retried")
            ),
            (ada, Cancel, emails, Some(f.available(0)), Done, Some("requested by ada")),
            (ada, Cancel, None, Some(999999L), NotFound, None)
          )
        )
    }
  }

  test("a refused request records nothing: no session, a wrong CSRF token, a malformed form, a reader") {
    val byHeader = (req: Request[IO]) =>
      IO.pure(req.headers.get(ci"X-User").map(_.head.value) match
        case Some("rita") => ConsoleAccess.Read("rita")
        case _ => ConsoleAccess.Denied)
    for
      _ <- ConsoleClient.console().use { (client, db, f) =>
        for
          (cookie, csrf) <- client.login()
          statuses <- Vector(
            client.post(s"tasks/${f.dead}/retry", Seq("csrf" -> csrf)),
            client.post(s"tasks/${f.dead}/retry", Seq("csrf" -> ("0" * 64)), Some(cookie)),
            client.post("queues/emails/limit", Seq("csrf" -> csrf, "max_running" -> "-1"), Some(cookie)),
            client.post(
              "tasks/actions",
              Seq("csrf" -> csrf, "action" -> "explode", "id" -> "1"),
              Some(cookie)
            ),
            client.post("tasks/abc/retry", Seq("csrf" -> csrf), Some(cookie))
          ).traverse(_.map(_.status))
          entries <- log(db)
        yield
          assertEquals(
            statuses,
            Vector(
              Status.Forbidden,
              Status.Forbidden,
              Status.BadRequest,
              Status.BadRequest,
              Status.BadRequest
            )
          )
          assertEquals(entries, Vector.empty)
      }
      _ <- ConsoleClient.hosted(ConsoleOptions(), byHeader).use { (client, db, f) =>
        for
          reader <- client.withHeaders(Header.Raw(ci"X-User", "rita")).post(s"tasks/${f.dead}/retry", Nil)
          stranger <- client.post("queues/emails/pause", Nil)
          entries <- log(db)
        yield
          assertEquals((reader.status, stranger.status), (Status.Forbidden, Status.Forbidden))
          assertEquals(entries, Vector.empty)
      }
    yield ()
  }

  test("the audit page: filtered by operator, queue and task, newest first, in keyset pages; a task's own") {
    val byHeader = (req: Request[IO]) =>
      IO.pure(req.headers.get(ci"X-User").fold[ConsoleAccess](ConsoleAccess.Denied)(h =>
        ConsoleAccess.Act(h.head.value, Some(s"${h.head.value}-session"))
      ))
    ConsoleClient.hosted(ConsoleOptions(pageSize = 2), byHeader).use { (client, db, f) =>
      val ada = client.withHeaders(Header.Raw(ci"X-User", "ada"))
      val bob = client.withHeaders(Header.Raw(ci"X-User", "bob"))
      def walk(who: ConsoleClient, path: String, seen: Vector[Long]): IO[Vector[Long]] =
        who.get(path).flatMap { (status, page) =>
          assertEquals(status, Status.Ok, path)
          val next =
            """rel="next" href="\./([^"]+)"""".r.findFirstMatchIn(page).map(_.group(1).replace("&amp;", "&"))
          next.fold(IO.pure(seen ++ ids(page, "data-entry")))(walk(who, _, seen ++ ids(page, "data-entry")))
        }
      for
        (_, page) <- ada.get("queues/emails")
        adaCsrf = ConsoleClient.csrf(page).get
        (_, bobPage) <- bob.get("queues/emails")
        bobCsrf = ConsoleClient.csrf(bobPage).get
        _ <- ada.post("queues/emails/pause", Seq("csrf" -> adaCsrf))
        _ <- bob.post("queues/reports/pause", Seq("csrf" -> bobCsrf))
        _ <- ada.post(s"tasks/${f.dead}/retry", Seq("csrf" -> adaCsrf))
        _ <- bob.post(s"tasks/${f.dead}/cancel", Seq("csrf" -> bobCsrf))
        _ <- bob.post("queues/emails/resume", Seq("csrf" -> bobCsrf))
        all <- AuditLog(db).entries(limit = 100).map(_.map(e => (e.id, e.operator.name, e.queue, e.task)))
        everything <- walk(ada, "audit", Vector.empty)
        bobs <- walk(ada, "audit?operator=bob", Vector.empty)
        reports <- walk(ada, "audit?queue=reports", Vector.empty)
        dead <- walk(ada, s"audit?task=${f.dead}", Vector.empty)
        (bad, why) <- ada.get("audit?task=x1")
        (_, taskPage) <- ada.get(s"tasks/${f.dead}")
      yield
        assertEquals(all.size, 5)
        assertEquals(everything, all.map(_._1))
        assertEquals(bobs, all.filter(_._2 == "bob").map(_._1))
        assertEquals(reports, all.filter(_._3.contains("reports")).map(_._1))
        assertEquals(dead, all.filter(_._4.contains(f.dead)).map(_._1))
        assertEquals(dead.size, 2)
        assertEquals(bad, Status.BadRequest)
        assert(why.contains("task must be a whole number &gt; 0, was: &#39;x1&#39;"), why)
        val section = taskPage.substring(taskPage.indexOf("""<section class="task-audit">"""))
        assertEquals(ids(section, "data-entry"), dead)
        assert(section.contains("""<td class="operator">bob</td>"""), section)
        assert(section.contains("requested by bob"), section)
    }
  }
