package weir.console

import cats.effect.IO
import munit.CatsEffectSuite
import org.http4s.*
import org.http4s.headers.Location
import weir.console.ConsoleClient.withFilter
import weir.postgres.{
  After, AuditFilter, AuditLog, Batches, NewTask, TaskBrowser, TaskGraph, TaskQueue, TaskState, WorkflowId
}

import scala.concurrent.duration.*

/**
 * A workflow's and a batch's pages and their cancels through http4s' client against a real PostgreSQL: the
 * pages list each task with a link to its own page, a task's page links to its workflow and batch, HEAD is
 * answered as GET is, bad and unknown ids are a 400 and a 404, and a cancel is an operator's action like any
 * other (CSRF, refused to readers, recorded in the audit log as theirs, one entry per task).
 */
class ConsoleGroupPagesSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 90.seconds

  /** A workflow a → (b, c) in a batch of its own, and a batch of three more members: their ids. */
  private def plantGroups(db: weir.postgres.Database[IO]) =
    val q = TaskQueue[IO, Int](db, "flows")
    val batches = Batches(db)
    for
      batch <- batches.open(q, NewTask(0))
      g <- batches.addGraph(
        batch,
        TaskGraph.empty.add("a", q, NewTask(1))
          .add("b", q, NewTask(2), after = Vector(After.completed("a")))
          .add("c", q, NewTask(3), after = Vector(After.completed("a"), After.completed("b")))
      )
      more <- batches.add(batch, q, (4 to 6).map(NewTask(_)))
    yield (Vector("a", "b", "c").map(g(_).taskId), batch, more.map(_.taskId))

  test(
    "a workflow's page groups its tasks by layer and links each; a task's page links to its workflow and batch"
  ) {
    ConsoleClient.console().use { (client, db, _) =>
      for
        (ids, batch, more) <- plantGroups(db)
        w = ids.head
        (status, page) <- client.get(s"workflows/$w")
        head <- client.head(s"workflows/$w")
        headBody <- head.as[String]
        (batchStatus, batchPage) <- client.get(s"batches/${batch.value}")
        (_, secondPage) <- client.get(s"batches/${batch.value}?after=${more(1)}")
        (_, taskPage) <- client.get(s"tasks/${ids(1)}")
        callback <- Batches(db).progress(batch).map(_.fold(0L)(_.callback))
        (_, callbackPage) <- client.get(s"tasks/$callback")
        (unknown, _) <- client.get("workflows/999999")
        (unknownBatch, _) <- client.get("batches/999999")
        (malformed, _) <- client.get("workflows/seven")
        (badAfter, badAfterPage) <- client.get(s"batches/${batch.value}?after=minus")
      yield
        assertEquals((status, batchStatus), (Status.Ok, Status.Ok))
        assertEquals((head.status, headBody), (Status.Ok, ""))
        assert(page.contains("<h1>Workflow " + w + "</h1>"), page)
        val layers =
          """<tbody class="layer" data-layer="(\d+)">""".r.findAllMatchIn(page).map(_.group(1)).toList
        assertEquals(layers, List("0", "1", "2"))
        ids.foreach(id =>
          assert(page.contains(s"""<a href="../tasks/$id">$id</a>"""), s"no link to task $id")
        )
        assert(page.contains("""<progress value="0" max="3">"""), page)
        assert(page.contains(s"""<a href="../batches/${batch.value}">"""), page)
        (ids ++ more).foreach(id => assert(batchPage.contains(s"""<tr data-task="$id">"""), s"member $id"))
        assert(batchPage.contains("""<progress value="0" max="6">"""), batchPage)
        assert(batchPage.contains(s"""<a href="../workflows/$w">$w</a>"""), batchPage)
        assertEquals(
          """<tr data-task="(\d+)">""".r.findAllMatchIn(secondPage).map(_.group(1).toLong).toList,
          List(more(2))
        )
        assert(taskPage.contains(s"""<a class="workflow" href="../workflows/$w">$w</a>"""), taskPage)
        assert(taskPage.contains(s"""<a class="batch" href="../batches/${batch.value}">"""), taskPage)
        // the callback is in no workflow; its page links to its batch
        assert(!callbackPage.contains("""<a class="workflow""""), callbackPage)
        assert(callbackPage.contains(s"""<a class="batch" href="../batches/${batch.value}">"""), callbackPage)
        assertEquals((unknown, unknownBatch), (Status.NotFound, Status.NotFound))
        assertEquals((malformed, badAfter), (Status.BadRequest, Status.BadRequest))
        assert(badAfterPage.contains("malformed after: &#39;minus&#39;"), badAfterPage)
    }
  }

  test(
    "cancelling a workflow or a batch: refused to readers and without the CSRF token; an operator's is audited"
  ) {
    ConsoleClient.console().use { (client, db, _) =>
      val browser = TaskBrowser(db)
      for
        (ids, batch, more) <- plantGroups(db)
        w = ids.head
        readOnly <- client.post(s"workflows/$w/cancel", Nil)
        login <- client.post("login", Seq("token" -> ConsoleClient.token, "operator" -> "ada"))
        cookie = login.cookies.find(_.name == ConsoleClient.cookie).map(_.content)
        (_, page) <- client.get(s"workflows/$w", cookie)
        csrf = ConsoleClient.csrf(page).getOrElse(fail(s"no CSRF token in:\n$page"))
        noCsrf <- client.post(s"workflows/$w/cancel", Nil, cookie)
        untouched <- browser.workflow(WorkflowId(w))
        done <- client.post(s"workflows/$w/cancel", Seq("csrf" -> csrf), cookie)
        cancelled <- browser.workflow(WorkflowId(w))
        batchDone <- client.post(s"batches/${batch.value}/cancel", Seq("csrf" -> csrf), cookie)
        members <- browser.batch(batch)
        unknown <- client.post("workflows/999999/cancel", Seq("csrf" -> csrf), cookie)
        audit <- AuditLog(db).entries(AuditFilter(operator = Some("ada")), limit = 100)
      yield
        assertEquals((readOnly.status, noCsrf.status), (Status.Forbidden, Status.Forbidden))
        assertEquals(untouched.finished, 0L)
        assertEquals(done.status, Status.SeeOther)
        assertEquals(
          done.headers.get[Location].map(_.uri.renderString),
          Some(s"../$w?done=${"3 cancelled, 0 running told to stop".replace(" ", "%20").replace(",", "%2C")}")
        )
        assertEquals(cancelled.counts, Map(TaskState.Cancelled -> 3L))
        assertEquals(batchDone.status, Status.SeeOther)
        assertEquals(
          (members.progress.closed, members.progress.cancelled, members.progress.ended),
          (true, 6L, true)
        )
        assertEquals(unknown.status, Status.NotFound)
        assertEquals(audit.map(_.task.getOrElse(0L)).sorted, (ids ++ more).sorted)
        assertEquals(audit.map(_.operator.name).distinct, Vector("ada"))
    }
  }
