package weir.postgres

import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import org.scalacheck.Gen
import org.scalacheck.rng.Seed

import java.time.Instant
import scala.concurrent.duration.*

/**
 * The console's task list's paging ([[TaskBrowser]]) against a real PostgreSQL, on random tables planted
 * column by column as the console's filters see them, and random filters: walking every page of any filter,
 * in either order, with any page size and scan limit, gives each matching task exactly once, in the
 * promised order, and no other; every page holds at most its size and moves strictly on. The scan limits
 * are tiny here so that nearly every walk stops at scan bounds, in both tables. [[TaskBrowserPropertySuite]]
 * walks other tables ([[PlantedTasks]]) and checks each row as shown.
 */
class TaskPagesPropertySuite extends DbSuite:

  override def munitIOTimeout: Duration = 3.minutes

  private val now = Instant.parse("2026-06-01T12:00:00Z")

  /** A task as generated: live ones have no finish time; `state` as the console names it. */
  final case class Row(
      id: Long,
      queue: String,
      state: TaskState,
      priority: Int,
      key: Option[String],
      payload: String,
      createdAt: Instant,
      finishedAt: Option[Instant]
  )

  private val rows: Gen[Vector[Row]] =
    for
      n <- Gen.choose(0, 60)
      ids <- Gen.pick(n, 1L to 400L).map(_.toVector)
      rows <- Gen.sequence[Vector[Row], Row](ids.map { id =>
        for
          queue <- Gen.oneOf("a", "b")
          state <- Gen.oneOf(TaskState.values.toSeq)
          priority <- Gen.choose(0, 1)
          // running tasks go without a key: the schema allows one running task per key; a waiting one is
          // behind an earlier task of its key, so it has one
          key <- state match
            case TaskState.Running => Gen.const(None)
            case TaskState.Waiting => Gen.some(Gen.oneOf("k1", "k2"))
            case _ => Gen.option(Gen.oneOf("k1", "k2"))
          payload <- Gen.oneOf("x", "y", "X marks")
          created <- Gen.choose(0L, 50L).map(m => now.minusSeconds(3600 + m * 60))
          // few distinct finish times, so that ties are broken by id
          finished <- Gen.choose(0L, 5L).map(m => now.minusSeconds(m * 60))
        yield Row(id, queue, state, priority, key, payload, created, Option.when(!state.live)(finished))
      })
    yield rows

  private val filters: Gen[TaskQuery] =
    for
      queue <- Gen.option(Gen.oneOf("a", "b"))
      state <- Gen.option(Gen.oneOf(TaskState.values.toSeq))
      key <- Gen.option(Gen.oneOf("k1", "k2"))
      priority <- Gen.option(Gen.choose(0, 1))
      text <- Gen.option(Gen.oneOf("x", "MARKS"))
      sort <- Gen.oneOf(TaskSort.values.toSeq)
      oldest <- Gen.oneOf(false, true)
      range <- Gen.option(Gen.choose(0L, 60L).flatMap(a => Gen.choose(a, 60L).map(b => (a, b))))
    yield
      // a range of the sort's time: minutes before `now` (finish times lie in the last 5, enqueue times in
      // the hour before)
      val base = if sort == TaskSort.Finished then now else now.minusSeconds(3600)
      TaskQuery(
        queue = queue,
        state = state,
        key = key,
        priority = priority,
        from = range.map((_, b) => base.minusSeconds(b * 60)),
        to = range.map((a, _) => base.minusSeconds(a * 60 - 1)),
        text = text,
        sort = sort,
        oldest = oldest
      )

  private def plant(db: Database[IO], rs: Vector[Row]): IO[Unit] =
    val tasks = db.schema("tasks")
    val finished = db.schema("finished")
    val inserts = rs.traverse_ { r =>
      val payload = s"""{"v": "${r.payload}"}"""
      if r.state.live then
        val runAt = if r.state == TaskState.Scheduled then now.plusSeconds(86400 * 365 * 10) else r.createdAt
        val running = r.state == TaskState.Running
        (Fragment.const(s"""INSERT INTO $tasks (id, queue, payload, priority, run_at, state, attempt,
            ordering_key, head, lease_owner, lease_expires_at, lease_token, created_at) VALUES (""") ++
          fr0"${r.id}, ${r.queue}, $payload::jsonb, ${r.priority.toShort}, $runAt, " ++
          Fragment.const(s"'${if running then "running" else "available"}'") ++
          fr0", ${if running then 1 else 0}, ${r.key}, ${r.state != TaskState.Waiting}, ${Option.when(running)(1L)}, " ++
          fr0"${Option.when(running)(now.plusSeconds(3600))}, ${Option.when(running)(r.id)}, ${r.createdAt})")
          .update.run.void
      else
        (Fragment.const(s"""INSERT INTO $finished (id, queue, payload, priority, state, attempt, max_attempts,
            ordering_key, errors, created_at, finished_at) VALUES (""") ++
          fr0"${r.id}, ${r.queue}, $payload::jsonb, ${r.priority.toShort}, " ++
          Fragment.const(s"'${r.state.name}'") ++
          fr0", 1, 3, ${r.key}, '[]'::jsonb, ${r.createdAt}, ${r.finishedAt})").update.run.void
    }
    (Fragment.const(s"TRUNCATE $tasks, $finished").update.run *> inserts).transact(db.transactor)

  /** What the list must show for `f`: the matching tasks in the list's order. */
  private def expected(rs: Vector[Row], f: TaskQuery): Vector[Long] =
    val byFinish = f.sort == TaskSort.Finished
    val matching = rs.filter { r =>
      val at = if byFinish then r.finishedAt else Some(r.createdAt)
      (!byFinish || r.finishedAt.isDefined) &&
      f.queue.forall(_ == r.queue) && f.state.forall(_ == r.state) && f.key.forall(k => r.key.contains(k)) &&
      f.priority.forall(_ == r.priority) &&
      f.text.forall(t => s"""{"v": "${r.payload}"}""".toLowerCase.contains(t.toLowerCase)) &&
      f.from.forall(from => at.exists(!_.isBefore(from))) && f.to.forall(to => at.exists(_.isBefore(to)))
    }
    val oldestFirst =
      if byFinish then matching.sortBy(r => (r.finishedAt.get, r.id)).map(_.id) else matching.map(_.id).sorted
    if f.oldest then oldestFirst else oldestFirst.reverse

  /** Every page of `f` from the first, as the console's next links walk them. */
  private def walk(
      browser: TaskBrowser[IO],
      f: TaskQuery,
      size: Int,
      scan: Int
  ): IO[Vector[Long]] =
    def go(after: Option[TaskCursor], seen: Vector[Long], pages: Int): IO[Vector[Long]] =
      browser.tasks(f.copy(after = after), size, scan).flatMap { page =>
        assert(page.rows.size <= size, s"a page of ${page.rows.size} rows, size $size")
        assert(pages < 1000, s"more than 1000 pages for $f")
        page.next match
          case None => IO.pure(seen ++ page.rows.map(_.id))
          case Some(next) =>
            assert(after.forall(_ != next), s"the page after $after stays at $next")
            go(Some(next), seen ++ page.rows.map(_.id), pages + 1)
      }
    go(None, Vector.empty, 0)

  withDb("walking the pages of any filter gives every matching task once, in order, and nothing else") {
    db =>
      val browser = TaskBrowser(db)
      (1 to 40).toVector.traverse_ { i =>
        val seed = Seed(i.toLong)
        val rs = rows.pureApply(Gen.Parameters.default, seed)
        plant(db, rs) *> (0 until 8).toVector.traverse_ { j =>
          val s = seed.reseed(j.toLong)
          val f = filters.pureApply(Gen.Parameters.default, s)
          val size = Gen.choose(1, 4).pureApply(Gen.Parameters.default, s.next)
          val scan = Gen.choose(1, 8).pureApply(Gen.Parameters.default, s.next.next)
          walk(browser, f, size, scan).map(got =>
            assertEquals(got, expected(rs, f), s"scenario $i.$j: $f, page size $size, scan $scan, rows $rs")
          )
        }
      }
  }
