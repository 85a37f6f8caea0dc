package weir.guide.durable

// docs/durable.md, "Reading tasks and queues": DocSnippetsSuite checks that the page's block is this code, verbatim.

import cats.effect.IO
import cats.syntax.all.*
import weir.postgres.*

final class Browsing(db: Database[IO]):
  val browser: TaskBrowser[IO] = TaskBrowser(db)
  // the dead tasks of emails, the latest failures first: each page one range of an index
  val dead: TaskQuery =
    TaskQuery(queue = Some("emails"), state = Some(TaskState.Dead), sort = TaskSort.Finished)
  val firstPage: IO[TaskPage] = browser.tasks(dead, size = 20)
  // the next page starts after the last one's position (in a link: page.next.map(_.render), TaskCursor.parse)
  def nextPage(page: TaskPage): IO[Option[TaskPage]] =
    page.next.traverse(position => browser.tasks(dead.copy(after = Some(position)), size = 20))
  // one task, live or finished, with its headers and each attempt's error, its key's tasks around it and
  // the newest entries of the audit log that name it: one transaction
  def task(id: Long): IO[Option[TaskView]] = browser.view(id, neighbours = 5, actions = 20)
  // keys with tasks waiting, blocked ones first, their backlogs counted up to 1,000
  val keys: IO[Vector[KeyBacklog]] = browser.keys(limit = 200, cap = 1000)
  // every queue's tasks by state, finished ones counted up to 1,000; completed and dead per minute
  val counts: IO[Vector[QueueCounts]] = QueueOverview(db).counts(cap = 1000)
  val perMinute: IO[Vector[FinishedPerMinute]] = QueueOverview(db).throughput(Some("emails"))
