package weir.console

import cats.effect.IO
import cats.syntax.all.*
import munit.CatsEffectSuite
import org.http4s.*
import weir.console.ConsoleClient.withFilter

import scala.concurrent.duration.*

/**
 * The task list and a task's page through http4s' client against a real PostgreSQL: filters, keyset pages,
 * malformed filters (a 400 naming the value), payload search turned off, redaction.
 */
class ConsoleTaskPagesSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 90.seconds

  test("tasks: filters by state, queue, key and payload text") {
    ConsoleClient.console().use { (client, _, f) =>
      def ids(page: String) = """data-task="(\d+)"""".r.findAllMatchIn(page).map(_.group(1).toLong).toVector
      for
        (_, dead) <- client.get("tasks?state=dead")
        (_, reports) <- client.get("tasks?queue=reports")
        (_, keyed) <- client.get("tasks?key=user-1")
        (_, text) <- client.get("tasks?text=BOB@")
        (_, scheduled) <- client.get("tasks?state=scheduled")
        (_, waiting) <- client.get("tasks?state=waiting")
        (_, available) <- client.get("tasks?state=available")
        (_, byFinish) <- client.get("tasks?sort=finished")
        (_, all) <- client.get("tasks")
        (_, oldest) <- client.get("tasks?first=oldest")
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
    ConsoleClient.console(ConsoleOptions(pageSize = 2)).use { (client, _, f) =>
      def ids(page: String) = """data-task="(\d+)"""".r.findAllMatchIn(page).map(_.group(1).toLong).toVector
      def next(page: String) =
        """rel="next" href="\./([^"]+)"""".r.findFirstMatchIn(page).map(_.group(1).replace("&amp;", "&"))
      def walk(path: String, seen: Vector[Long]): IO[Vector[Long]] =
        client.get(path).flatMap { (status, page) =>
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
    ConsoleClient.console().use { (client, _, _) =>
      val bad = Vector(
        "state=zombie" -> "zombie",
        "priority=high" -> "high",
        "from=yesterday" -> "yesterday",
        "to=2026-13-45" -> "2026-13-45",
        "sort=random" -> "random",
        "after=12x" -> "12x"
      )
      bad.traverse { (q, value) =>
        client.get(s"tasks?$q").map { (status, page) =>
          assertEquals(status, Status.BadRequest, q)
          assert(page.contains(s"&#39;$value&#39;"), s"$q: $page")
        }
      }.void
    }
  }

  test("with payload search turned off, a text filter is a 400 and the form has no text field") {
    ConsoleClient.console(ConsoleOptions(payloadSearch = false)).use { (client, _, _) =>
      for
        (refused, why) <- client.get("tasks?text=hunter")
        (ok, page) <- client.get("tasks")
      yield
        assertEquals(refused, Status.BadRequest)
        assert(why.contains("searching payload text is turned off"), why)
        assertEquals(ok, Status.Ok)
        assert(!page.contains("name=\"text\""), page)
    }
  }

  test("a task's page: redacted pretty payload, trace id, every error, its key's neighbours") {
    val redacting = ConsoleOptions(redact = _.replace(Planted.password, "***"))
    ConsoleClient.console(redacting).use { (client, _, f) =>
      for
        (deadStatus, dead) <- client.get(s"tasks/${f.dead}")
        (_, first) <- client.get(s"tasks/${f.available.head}")
        (_, list) <- client.get("tasks?state=dead")
        (missing, _) <- client.get("tasks/999999")
        (malformed, _) <- client.get("tasks/abc")
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
