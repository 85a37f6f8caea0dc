package weir.postgres

import cats.effect.IO
import cats.syntax.all.*
import org.scalacheck.Gen
import org.scalacheck.rng.Seed
import weir.postgres.PlantedTasks.{Row, now}

import scala.concurrent.duration.*

/**
 * The task list against a real PostgreSQL, on random tables ([[PlantedTasks]]) and random queries: walking
 * every page of any query, in either order, with any page size and scan limit, gives each matching task
 * exactly once, in the promised order, as it was planted and in its state, and no other; every page holds
 * at most its size, moves strictly on, and when it stops at a scan bound goes on from there. The scan
 * limits are tiny so that nearly every walk stops at scan bounds, in both tables.
 */
class TaskBrowserPropertySuite extends DbSuite:

  override def munitIOTimeout: Duration = 3.minutes

  private val queries: Gen[TaskQuery] =
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
      // a range of the sort's time, in minutes before its base: finish times lie in the 5 minutes before
      // `now`, enqueue times in the hour before `now - 1 h`
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

  /** Every page of `q` from the first, each started at the previous one's `next`. */
  private def walk(browser: TaskBrowser[IO], q: TaskQuery, size: Int, scan: Int): IO[Vector[TaskRow]] =
    def go(after: Option[TaskCursor], seen: Vector[TaskRow], pages: Int): IO[Vector[TaskRow]] =
      browser.tasks(q.copy(after = after), size, scan).flatMap { page =>
        assert(page.rows.size <= size, s"a page of ${page.rows.size} rows, size $size")
        assert(pages < 1000, s"more than 1000 pages for $q")
        // a page cut short by its scan goes on where the scan stopped
        page.scannedTo.foreach(s => assertEquals(page.next, Some(s)))
        page.next match
          case None => IO.pure(seen ++ page.rows)
          case Some(next) =>
            assert(after.forall(_ != next), s"the page after $after stays at $next")
            go(Some(next), seen ++ page.rows, pages + 1)
      }
    go(None, Vector.empty, 0)

  /** A planted row as the list must show it. */
  private def shown(r: Row)
      : (Long, String, TaskState, Int, Option[String], java.time.Instant, Option[java.time.Instant], String) =
    (r.id, r.queue, r.state, r.priority, r.key, r.createdAt, r.finishedAt, PlantedTasks.payload(r))

  private def shown(r: TaskRow)
      : (Long, String, TaskState, Int, Option[String], java.time.Instant, Option[java.time.Instant], String) =
    (r.id, r.queue, r.state, r.priority, r.key, r.createdAt, r.finishedAt, r.payload)

  withDb(
    "walking the pages of any query gives every matching task once, in order, in its state, and nothing else"
  ) {
    db =>
      val browser = TaskBrowser(db)
      (1 to 40).toVector.traverse_ { i =>
        val seed = Seed(i.toLong)
        val rs = PlantedTasks.rows(60).pureApply(Gen.Parameters.default, seed)
        PlantedTasks.plant(db, rs) *> (0 until 8).toVector.traverse_ { j =>
          val s = seed.reseed(j.toLong)
          val q = queries.pureApply(Gen.Parameters.default, s)
          val size = Gen.choose(1, 4).pureApply(Gen.Parameters.default, s.next)
          val scan = Gen.choose(1, 8).pureApply(Gen.Parameters.default, s.next.next)
          walk(browser, q, size, scan).map(got =>
            assertEquals(
              got.map(shown),
              PlantedTasks.expected(rs, q).map(shown),
              s"scenario $i.$j: $q, page size $size, scan $scan, rows $rs"
            )
          )
        }
      }
  }

  withDb("one page as large as the table gives what a walk gives, and never stops at a scan bound") { db =>
    val browser = TaskBrowser(db)
    (1 to 10).toVector.traverse_ { i =>
      val seed = Seed(100L + i)
      val rs = PlantedTasks.rows(60).pureApply(Gen.Parameters.default, seed)
      val q = queries.pureApply(Gen.Parameters.default, seed.next)
      PlantedTasks.plant(db, rs) *> browser.tasks(q, size = 1000, scan = 1000).map { page =>
        assertEquals(page.rows.map(shown), PlantedTasks.expected(rs, q).map(shown), s"scenario $i: $q")
        assertEquals((page.next, page.scannedTo), (None, None))
      }
    }
  }
