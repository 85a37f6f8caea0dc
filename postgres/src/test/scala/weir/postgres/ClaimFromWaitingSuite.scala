package weir.postgres

import cats.effect.{IO, Ref}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.Pipeline
import weir.postgres.internal.Sql

/**
 * A dependent with one parent and no key, claimed straight from `waiting` (migration 18): its parent's
 * completion writes one row in `ready_parents` and leaves the dependent's row as it was; the read models
 * show it available meanwhile; a claim takes it, writing its row once, and the parent's row goes once none
 * of its dependents waits. A keyed dependent is released as before, and a parent that ends dead cancels
 * these dependents, or releases those that run on any outcome (their edges: see [[OneParentWithoutEdgesSuite]]).
 */
class ClaimFromWaitingSuite extends DbSuite:

  /** `(state, parents_left)` of each of `ids`, by id. */
  private def rows(db: Database[IO], ids: Long*): IO[Vector[(String, Int)]] =
    Fragment.const(
      s"SELECT state::text, parents_left FROM ${db.schema("tasks")} WHERE id IN (${ids.mkString(", ")}) ORDER BY id"
    ).query[(String, Int)].to[Vector].transact(TestDatabase.admin)

  private def readyParents(db: Database[IO]): IO[Vector[(String, Long)]] =
    Fragment.const(s"SELECT queue, parent FROM ${db.schema("ready_parents")} ORDER BY queue, parent")
      .query[(String, Long)].to[Vector].transact(TestDatabase.admin)

  withDb(
    "a one-parent dependent is claimed from waiting after its parent completed, shown available meanwhile"
  ) { db =>
    val q = TaskQueue[IO, String](db, "fw")
    val sql = new Sql(db.schema)
    def claim = sql.claim("fw", 1L, 10, 60000L).transact(TestDatabase.admin).map(_.rows)
    val browser = TaskBrowser(db)
    for
      p <- q.enqueue(NewTask("p")).map(_.taskId)
      c1 <- q.enqueue(NewTask("c1", after = Vector(After.completed(p)))).map(_.taskId)
      c2 <- q.enqueue(NewTask("c2", after = Vector(After.finished(p)))).map(_.taskId)
      keyed <-
        q.enqueue(NewTask("k", orderingKey = Some("key"), after = Vector(After.completed(p)))).map(_.taskId)
      first <- claim
      before <- browser.task(c1).map(_.map(_.state))
      _ <- sql.complete(Array(first.head.token), keep = false, keyed = false).transact(TestDatabase.admin)
      afterEnd <- rows(db, c1, c2, keyed)
      parents <- readyParents(db)
      shown <- List(c1, c2, keyed).traverse(id => browser.task(id).map(_.map(_.state)))
      depth <- TaskAdmin(db).overview.depths().map(_.find(_.queue == "fw"))
      stats <- TaskAdmin(db).overview.stats.map(_.find(_.queue == "fw").map(_.available))
      second <- claim
      left <- readyParents(db)
    yield
      // the parent alone first: its dependents wait, shown waiting
      assertEquals(first.map(_.id), Vector(p))
      assertEquals(before, Some(TaskState.Waiting))
      // its completion left the one-parent dependents' rows as they were and named the parent for their
      // queue; the keyed dependent was released as before
      assertEquals(afterEnd, Vector(("waiting", 1), ("waiting", 1), ("available", 0)))
      assertEquals(parents, Vector(("fw", p)))
      // every read model calls the three available
      assertEquals(
        shown,
        List(Some(TaskState.Available), Some(TaskState.Available), Some(TaskState.Available))
      )
      assertEquals(depth.map(d => (d.available, d.waiting)), Some((3L, 0L)))
      assertEquals(stats, Some(3L))
      // one claim takes all three, and the parent's row is gone with its last waiting dependent
      assertEquals(second.map(_.id).toSet, Set(c1, c2, keyed))
      assertEquals(left, Vector.empty)
  }

  withDb(
    "a parent that ends dead cancels its one-parent dependents and releases those that run anyway; no parent row"
  ) { db =>
    val q = TaskQueue[IO, String](db, "fw")
    for
      p <- q.enqueue(NewTask("p", maxAttempts = 1)).map(_.taskId)
      strict <- q.enqueue(NewTask("strict", after = Vector(After.completed(p)))).map(_.taskId)
      anyway <- q.enqueue(NewTask("anyway", after = Vector(After.finished(p)))).map(_.taskId)
      ran <- Ref[IO].of(Vector.empty[String])
      _ <- TestWorkers.statsAfterRun(DurableWorker.start[IO, String, Unit](db, TestWorkers.config("fw")) {
        source =>
          Pipeline(source).process(job =>
            ran.update(_ :+ job.payload) *>
              IO.raiseError(new RuntimeException("boom")).whenA(job.payload == "p")
          )
      })
      order <- ran.get
      strictEnd <- Rows.query[String](s"SELECT state::text FROM ${db.schema("finished")} WHERE id = $strict")
      anywayEnd <- Rows.query[String](s"SELECT state::text FROM ${db.schema("finished")} WHERE id = $anyway")
      parents <- readyParents(db)
    yield
      assertEquals(order, Vector("p", "anyway"))
      assertEquals(strictEnd, Vector("cancelled"))
      // released by its edge, run, and kept with its workflow
      assertEquals(anywayEnd, Vector("completed"))
      assertEquals(parents, Vector.empty)
  }
