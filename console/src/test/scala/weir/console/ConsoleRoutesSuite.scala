package weir.console

import cats.effect.IO
import doobie.*
import doobie.implicits.*
import munit.CatsEffectSuite
import org.http4s.*
import org.http4s.headers.Location
import org.http4s.implicits.*
import weir.console.ConsoleClient.withFilter
import weir.postgres.TaskAdmin

import scala.concurrent.duration.*

/**
 * The console's pages other than the tasks' through http4s' client against a real PostgreSQL: the overview
 * and its counts, a queue, the fragment, the series and the assets, keys, workers and schedules.
 */
class ConsoleRoutesSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 90.seconds

  test("the overview lists every queue with its counts, and links relative to the mount point") {
    ConsoleClient.console().use { (client, _, _) =>
      for
        (status, page) <- client.get("")
        redirect <- client.client.run(Request[IO](Method.GET, uri"/ops/weir")).use(r => IO.pure(r))
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
    ConsoleClient.console(ConsoleOptions(countCap = 10)).use { (client, db, f) =>
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
        (_, page) <- client.get("")
        (_, reports) <- client.get("queues/reports")
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
    ConsoleClient.console(ConsoleOptions(countsEvery = 1.hour)).use { (client, db, f) =>
      // emails: available, scheduled, waiting, running, completed, dead
      val before = """<td class="n">2</td><td class="n">0</td><td class="n">1</td><td class="n">0</td>
<td class="n">0</td><td class="n">1</td>"""
      val after = """<td class="n">3</td><td class="n">0</td><td class="n">1</td><td class="n">0</td>
<td class="n">0</td><td class="n">0</td>"""
      for
        (_, first) <- client.get("")
        retried <- TaskAdmin(db).tasks.retry(f.dead)
        (_, shared) <- client.get("fragments/queues")
        (_, own) <- client.get("queues/emails")
        out <- WeirConsole.routes(db, ConsoleOptions(countsEvery = 61.minutes)).use_.attempt
      yield
        assertEquals(retried, weir.postgres.Retry.Retried)
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
    ConsoleClient.console().use { (client, _, _) =>
      for
        (fs, fragment) <- client.get("fragments/queues")
        (ts, json) <- client.get("api/throughput?queue=emails")
        (as, uplot) <- client.get("assets/uplot/uPlot.iife.min.js")
        (cs, script) <- client.get("assets/console.js")
        (ms, _) <- client.get("assets/missing.js")
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
    ConsoleClient.console().use { (client, _, _) =>
      for
        (status, page) <- client.get("queues/emails")
        (_, reports) <- client.get("queues/reports")
        (missing, _) <- client.get("queues/nope")
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

  test("keys (blocked first), workers and schedules") {
    ConsoleClient.console().use { (client, _, f) =>
      for
        (ks, keys) <- client.get("keys")
        (ws, workers) <- client.get("workers")
        (ss, schedules) <- client.get("schedules")
      yield
        assertEquals((ks, ws, ss), (Status.Ok, Status.Ok, Status.Ok))
        assert(keys.contains("""<tr data-key="user-1">"""), keys)
        assert(keys.contains(s"""href="./tasks/${f.available.head}""""), "the head is the key's first task")
        assert(keys.contains("<td class=\"n\">2</td>"), "two tasks in the key")
        assert(workers.contains("No worker is registered."))
        assert(schedules.contains("No schedule is declared."))
    }
  }
