package weir.console

import cats.effect.IO
import doobie.*
import doobie.implicits.*
import cats.syntax.all.*
import munit.CatsEffectSuite
import org.http4s.*
import org.http4s.client.Client
import org.http4s.headers.{Cookie, Location}
import org.http4s.implicits.*
import org.http4s.server.Router
import weir.postgres.{Database, TaskAdmin}

import scala.concurrent.duration.*

/**
 * Every endpoint of the console through http4s' client against a real PostgreSQL, bad input included: a
 * refused or malformed request answers a 4xx and changes nothing in the database.
 */
class ConsoleRoutesSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 90.seconds

  private val token = "correct-horse-battery"

  // lets the tests bind a response's parts with a tuple pattern in a for comprehension
  extension [A](io: IO[A])
    private def withFilter(p: A => Boolean): IO[A] =
      io.flatMap(a => if p(a) then IO.pure(a) else IO.raiseError(new MatchError(a)))

  /** A client of the console's routes mounted at `/ops/weir`, over a freshly planted schema. */
  private def console(options: ConsoleOptions = ConsoleOptions(adminToken = Some(token))) =
    ConsoleDatabase.planted.flatMap { (db, fixture) =>
      WeirConsole.routes(db, options).map(routes =>
        (Client.fromHttpApp(Router("/ops/weir" -> routes).orNotFound), db, fixture)
      )
    }

  private def get(client: Client[IO], path: String, cookie: Option[String] = None): IO[(Status, String)] =
    val req = Request[IO](Method.GET, Uri.unsafeFromString("/ops/weir/" + path))
    client.run(cookie.fold(req)(c => req.putHeaders(Cookie(RequestCookie("weir_console_session", c)))))
      .use(r => r.as[String].map(r.status -> _))

  private def post(
      client: Client[IO],
      path: String,
      form: Seq[(String, String)],
      cookie: Option[String] = None
  )
      : IO[Response[IO]] =
    val req = Request[IO](Method.POST, Uri.unsafeFromString("/ops/weir/" + path))
      .withEntity(UrlForm(form*))
    client.run(cookie.fold(req)(c => req.putHeaders(Cookie(RequestCookie("weir_console_session", c)))))
      .use(r => r.as[String].map(body => r.withEntity(body)))

  private def body(r: Response[IO]): IO[String] = r.as[String]

  /** Logs in with the token: the session cookie and the CSRF token its pages carry. */
  private def login(client: Client[IO]): IO[(String, String)] =
    for
      r <- post(client, "login", Seq("token" -> token))
      _ = assertEquals(r.status, Status.SeeOther)
      cookie =
        r.cookies.find(_.name == "weir_console_session").map(_.content).getOrElse(fail("no session cookie"))
      (_, page) <- get(client, "", Some(cookie))
      csrf = """name="csrf" value="([0-9a-f]+)"""".r.findFirstMatchIn(
        page
      ).map(_.group(1)).getOrElse(fail("no CSRF token"))
    yield (cookie, csrf)

  private def paused(db: Database[IO], queue: String): IO[Boolean] =
    TaskAdmin(db).queues.map(_.find(_.name == queue).exists(_.paused))

  test("the overview lists every queue with its counts, and links relative to the mount point") {
    console().use { (client, _, _) =>
      for
        (status, page) <- get(client, "")
        redirect <- client.run(Request[IO](Method.GET, uri"/ops/weir")).use(r => IO.pure(r))
      yield
        assertEquals(status, Status.Ok)
        assert(page.contains("""<tr data-queue="emails">"""), page)
        assert(page.contains("""<tr data-queue="reports">"""), page)
        // emails: 2 available, 0 scheduled, 1 waiting behind its key, 0 running, 0 completed, 1 dead
        assert(
          page.contains("""<td class="n">2</td><td class="n">0</td><td class="n">1</td><td class="n">0</td>
<td class="n">0</td><td class="n">1</td>"""),
          page
        )
        assert(page.contains("""href="./tasks""""), page)
        assert(!page.contains("href=\"/"), "no absolute link")
        assertEquals(redirect.status, Status.SeeOther)
        assertEquals(redirect.headers.get[Location].map(_.uri.renderString), Some("/ops/weir/"))
    }
  }

  test("finished tasks are counted up to the cap, and a cap out of bounds is refused naming it") {
    console(ConsoleOptions(countCap = 10)).use { (client, db, f) =>
      val finished = db.schema("finished")
      val tasks = db.schema("tasks")
      // eleven more dead tasks in emails, copies of the planted one: twelve in all, two over the cap
      val copies = Fragment.const(
        s"""INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts, errors, created_at)
           SELECT nextval(pg_get_serial_sequence('$tasks', 'id')), queue, payload, priority, state, attempt,
                  max_attempts, errors, created_at FROM $finished, generate_series(1, 11) WHERE id = """
      ) ++ fr0"${f.dead}"
      for
        _ <- copies.update.run.transact(db.transactor)
        (_, page) <- get(client, "")
        (_, reports) <- get(client, "queues/reports")
        low <- WeirConsole.routes(db, ConsoleOptions(countCap = 9)).use_.attempt
      yield
        // emails: dead at the cap; reports: its one completed task, under it
        assert(page.contains("""<td class="n">0</td><td class="n">10+</td><td class="n">0</td>"""), page)
        assert(reports.contains("""<td class="n">1</td><td class="n">0</td><td class="n">0</td>"""), reports)
        assertEquals(
          low.left.map(_.getMessage),
          Left("invalid ConsoleOptions: countCap must be in 10..1000000, was: 9")
        )
    }
  }

  test("the overview's counts are one reading shared until the next is due; a queue's page reads its own") {
    console(ConsoleOptions(countsEvery = 1.hour)).use { (client, db, f) =>
      // emails: available, scheduled, waiting, running, completed, dead
      val before = """<td class="n">2</td><td class="n">0</td><td class="n">1</td><td class="n">0</td>
<td class="n">0</td><td class="n">1</td>"""
      val after = """<td class="n">3</td><td class="n">0</td><td class="n">1</td><td class="n">0</td>
<td class="n">0</td><td class="n">0</td>"""
      for
        (_, first) <- get(client, "")
        retried <- TaskAdmin(db).retry(f.dead)
        (_, shared) <- get(client, "fragments/queues")
        (_, own) <- get(client, "queues/emails")
        out <- WeirConsole.routes(db, ConsoleOptions(countsEvery = 61.minutes)).use_.attempt
      yield
        assert(retried)
        assert(first.contains(before), first)
        assert(first.contains("""<p class="counted">Counted at <time datetime="""), first)
        assert(shared.contains(before), shared)
        assert(own.contains(after), own)
        assertEquals(
          out.left.map(_.getMessage),
          Left("invalid ConsoleOptions: countsEvery must be in 0 s..1 hour, was: 61 minutes")
        )
    }
  }

  test("the queue fragment, the throughput series and the assets") {
    console().use { (client, _, _) =>
      for
        (fs, fragment) <- get(client, "fragments/queues")
        (ts, json) <- get(client, "api/throughput?queue=emails")
        (as, uplot) <- get(client, "assets/uplot/uPlot.iife.min.js")
        (cs, script) <- get(client, "assets/console.js")
        (ms, _) <- get(client, "assets/missing.js")
      yield
        assertEquals((fs, ts, as, cs, ms), (Status.Ok, Status.Ok, Status.Ok, Status.Ok, Status.NotFound))
        assert(fragment.startsWith("<table"), fragment)
        val series = io.circe.parser.parse(json).toOption.get
        assertEquals(series.hcursor.get[Vector[Long]]("t").map(_.size), Right(60))
        assertEquals(series.hcursor.get[Vector[Long]]("dead").map(_.sum), Right(1L))
        assertEquals(series.hcursor.get[Vector[Long]]("completed").map(_.sum), Right(0L))
        assert(uplot.contains("uPlot"))
        assert(script.contains("data-refresh"))
    }
  }

  test("a queue's page, and an unknown queue is a 404") {
    console().use { (client, _, _) =>
      for
        (status, page) <- get(client, "queues/emails")
        (_, reports) <- get(client, "queues/reports")
        (missing, _) <- get(client, "queues/nope")
      yield
        assertEquals(status, Status.Ok)
        assert(page.contains("Queue emails"))
        assert(page.contains("""action="../queues/emails/pause""""), page)
        // the queue's own counts, read for it alone
        assert(
          page.contains("""<td class="n">2</td><td class="n">0</td><td class="n">1</td><td class="n">0</td>
<td class="n">0</td><td class="n">1</td><td class="n">0</td>"""),
          page
        )
        assert(!page.contains("""data-queue="reports""""), page)
        // reports: 1 scheduled, 1 completed
        assert(
          reports.contains("""<td class="n">0</td><td class="n">1</td><td class="n">0</td><td class="n">0</td>
<td class="n">1</td><td class="n">0</td><td class="n">0</td>"""),
          reports
        )
        assertEquals(missing, Status.NotFound)
    }
  }

  test("tasks: filters by state, queue, key and payload text") {
    console().use { (client, _, f) =>
      def ids(page: String) = """data-task="(\d+)"""".r.findAllMatchIn(page).map(_.group(1).toLong).toVector
      for
        (_, dead) <- get(client, "tasks?state=dead")
        (_, reports) <- get(client, "tasks?queue=reports")
        (_, keyed) <- get(client, "tasks?key=user-1")
        (_, text) <- get(client, "tasks?text=BOB@")
        (_, scheduled) <- get(client, "tasks?state=scheduled")
        (_, waiting) <- get(client, "tasks?state=waiting")
        (_, available) <- get(client, "tasks?state=available")
        (_, byFinish) <- get(client, "tasks?sort=finished")
        (_, all) <- get(client, "tasks")
        (_, oldest) <- get(client, "tasks?first=oldest")
      yield
        assertEquals(ids(dead), Vector(f.dead))
        assertEquals(ids(reports).toSet, Set(f.completed, f.scheduled))
        assertEquals(ids(keyed), f.available.take(2).reverse)
        assertEquals(ids(text), Vector(f.available(2)))
        assertEquals(ids(scheduled), Vector(f.scheduled))
        assertEquals(ids(waiting), Vector(f.available(1)), "behind the first task of its key")
        assertEquals(ids(available), Vector(f.available(2), f.available(0)))
        assertEquals(ids(byFinish).toSet, Set(f.dead, f.completed))
        assertEquals(ids(all), f.all.sorted.reverse, "newest enqueued first")
        assertEquals(ids(oldest), f.all.sorted)
    }
  }

  test("tasks: keyset pages cover every task once, newest first, and follow the filter") {
    console(ConsoleOptions(pageSize = 2)).use { (client, _, f) =>
      def ids(page: String) = """data-task="(\d+)"""".r.findAllMatchIn(page).map(_.group(1).toLong).toVector
      def next(page: String) =
        """rel="next" href="\./([^"]+)"""".r.findFirstMatchIn(page).map(_.group(1).replace("&amp;", "&"))
      def walk(path: String, seen: Vector[Long]): IO[Vector[Long]] =
        get(client, path).flatMap { (status, page) =>
          assertEquals(status, Status.Ok)
          assert(ids(page).size <= 2, page)
          next(page).fold(IO.pure(seen ++ ids(page)))(walk(_, seen ++ ids(page)))
        }
      for
        all <- walk("tasks", Vector.empty)
        emails <- walk("tasks?queue=emails", Vector.empty)
      yield
        assertEquals(all, f.all.sorted.reverse)
        assertEquals(emails, (f.available :+ f.dead).sorted.reverse)
    }
  }

  test("tasks: a malformed filter is a 400 naming the value") {
    console().use { (client, _, _) =>
      val bad = Vector(
        "state=zombie" -> "zombie",
        "priority=high" -> "high",
        "from=yesterday" -> "yesterday",
        "to=2026-13-45" -> "2026-13-45",
        "sort=random" -> "random",
        "after=12x" -> "12x"
      )
      bad.traverse { (q, value) =>
        get(client, s"tasks?$q").map { (status, page) =>
          assertEquals(status, Status.BadRequest, q)
          assert(page.contains(s"&#39;$value&#39;"), s"$q: $page")
        }
      }.void
    }
  }

  test("with payload search turned off, a text filter is a 400 and the form has no text field") {
    console(ConsoleOptions(payloadSearch = false)).use { (client, _, _) =>
      for
        (refused, why) <- get(client, "tasks?text=hunter")
        (ok, page) <- get(client, "tasks")
      yield
        assertEquals(refused, Status.BadRequest)
        assert(why.contains("searching payload text is turned off"), why)
        assertEquals(ok, Status.Ok)
        assert(!page.contains("name=\"text\""), page)
    }
  }

  test("a task's page: redacted pretty payload, trace id, every error, its key's neighbours") {
    val redacting = ConsoleOptions(redact = _.replace(Planted.password, "***"))
    console(redacting).use { (client, _, f) =>
      for
        (deadStatus, dead) <- get(client, s"tasks/${f.dead}")
        (_, first) <- get(client, s"tasks/${f.available.head}")
        (_, list) <- get(client, "tasks?state=dead")
        (missing, _) <- get(client, "tasks/999999")
        (malformed, _) <- get(client, "tasks/abc")
      yield
        assertEquals(deadStatus, Status.Ok)
        assert(
          !dead.contains(Planted.password) && dead.contains("&quot;password&quot;: &quot;***&quot;"),
          dead
        )
        assert(!list.contains(Planted.password), "the list redacts too")
        assert(dead.contains("java.io.IOException: timeout"), dead)
        assert(dead.contains("smtp.example.org refused the connection"), dead)
        assert(dead.contains("at Mailer.send"), "the stack, folded")
        assert(first.contains(s"""<code class="trace-id">${Planted.traceId}</code>"""), first)
        assert(first.contains(s"""href="../tasks/${f.available(1)}""""), "the next task of its key")
        assertEquals(missing, Status.NotFound)
        assertEquals(malformed, Status.BadRequest)
    }
  }

  test("keys (blocked first), workers and schedules") {
    console().use { (client, _, f) =>
      for
        (ks, keys) <- get(client, "keys")
        (ws, workers) <- get(client, "workers")
        (ss, schedules) <- get(client, "schedules")
      yield
        assertEquals((ks, ws, ss), (Status.Ok, Status.Ok, Status.Ok))
        assert(keys.contains("""<tr data-key="user-1">"""), keys)
        assert(keys.contains(s"""href="./tasks/${f.available.head}""""), "the head is the key's first task")
        assert(keys.contains("<td class=\"n\">2</td>"), "two tasks in the key")
        assert(workers.contains("No worker is registered."))
        assert(schedules.contains("No schedule is declared."))
    }
  }

  test("read-only: every action is a 403 and changes nothing") {
    console(ConsoleOptions.readOnly).use { (client, db, f) =>
      for
        before <- Planted.snapshot(db)
        responses <- Vector(
          post(client, "queues/emails/pause", Nil),
          post(client, s"tasks/${f.dead}/retry", Nil),
          post(client, "tasks/actions", Seq("action" -> "discard", "id" -> f.dead.toString)),
          post(client, "login", Seq("token" -> token))
        ).sequence
        after <- Planted.snapshot(db)
        stillActive <- paused(db, "emails")
        (_, page) <- get(client, "queues/emails")
      yield
        assertEquals(responses.map(_.status), Vector.fill(4)(Status.Forbidden))
        assertEquals(after, before)
        assert(!stillActive)
        assert(!page.contains("<form method=\"post\""), "no action forms")
    }
  }

  test("an action needs the session and its CSRF token: without either it is a 403 and nothing changes") {
    console().use { (client, db, f) =>
      for
        before <- Planted.snapshot(db)
        wrongLogin <- post(client, "login", Seq("token" -> "not-the-token"))
        (cookie, csrf) <- login(client)
        noSession <- post(client, "queues/emails/pause", Seq("csrf" -> csrf))
        noCsrf <- post(client, "queues/emails/pause", Nil, Some(cookie))
        wrongCsrf <- post(client, "queues/emails/pause", Seq("csrf" -> ("0" * 64)), Some(cookie))
        forged <- post(client, s"tasks/${f.dead}/retry", Seq("csrf" -> csrf), Some("00.11"))
        after <- Planted.snapshot(db)
        isPaused <- paused(db, "emails")
        ok <- post(client, "queues/emails/pause", Seq("csrf" -> csrf), Some(cookie))
        nowPaused <- paused(db, "emails")
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
    console().use { (client, db, _) =>
      val admin = TaskAdmin(db)
      for
        (cookie, csrf) <- login(client)
        act = (path: String, form: Seq[(String, String)]) =>
          post(client, path, ("csrf" -> csrf) +: form, Some(cookie))
        paused <- act("queues/emails/pause", Nil).map(_.status)
        resumed <- act("queues/emails/resume", Nil).map(_.status)
        limited <-
          act("queues/emails/limit", Seq("max_running" -> "3", "rate" -> "2.5", "burst" -> "5")).map(_.status)
        set <- admin.queues.map(_.find(_.name == "emails"))
        bad <- act("queues/emails/limit", Seq("max_running" -> "-1"))
        badBody <- body(bad)
        burstAlone <- act("queues/emails/limit", Seq("burst" -> "5")).map(_.status)
        unchanged <- admin.queues.map(_.find(_.name == "emails"))
        unknown <- act("queues/nope/pause", Nil).map(_.status)
        cleared <- act("queues/emails/limit", Seq("max_running" -> "", "rate" -> "")).map(_.status)
        none <- admin.queues.map(_.find(_.name == "emails"))
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
    console().use { (client, db, f) =>
      for
        (cookie, csrf) <- login(client)
        act = (path: String) => post(client, path, Seq("csrf" -> csrf), Some(cookie))
        retried <- act(s"tasks/${f.dead}/retry")
        afterRetry <- Planted.where(db, f.dead)
        again <- act(s"tasks/${f.dead}/retry")
        againBody <- body(again)
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
    console().use { (client, db, f) =>
      for
        (cookie, csrf) <- login(client)
        batch = (form: Seq[(String, String)]) =>
          post(client, "tasks/actions", ("csrf" -> csrf) +: form, Some(cookie))
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
        okBody <- body(ok)
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
