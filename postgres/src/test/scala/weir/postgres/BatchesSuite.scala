package weir.postgres

import cats.effect.{IO, Ref}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.{Limit, Pipeline}
import weir.postgres.internal.{AdminSql, Counters, Pruner, Sql, WorkerLog}
import weir.testkit.Eventually

import scala.concurrent.duration.*

/**
 * Batches against a real server, statement by statement: the callback waits outside the claim from the
 * open, is released once in the transaction that ends the batch (the close or the last member's end,
 * whichever is second, in one transaction or two), with the members' ends counted by outcome; a batch never
 * closed never ends, an empty one ends at its close; members may be graphs, may add to their own batch, and
 * a batch's cancel cancels what has not ended.
 */
class BatchesSuite extends DbSuite:

  /** `(state, parents_left)` of the live task `id`, or nothing if it left `tasks`. */
  private def live(db: Database[IO], id: Long): IO[Vector[(String, Int)]] =
    Rows.query[(String, Int)](s"SELECT state::text, parents_left FROM ${db.schema("tasks")} WHERE id = $id")

  private def progress(db: Database[IO], batch: BatchId): IO[BatchProgress] =
    Batches(db).progress(batch).map(_.getOrElse(fail(s"$batch not found")))

  /** Claims up to 100 tasks of `queue` as worker 1: each task's id and its claim's token. */
  private def claim(db: Database[IO], queue: String): IO[Map[Long, Long]] =
    new Sql(db.schema).claim(queue, 1L, 100, 60000L).transact(TestDatabase.admin).map(
      _.rows.map(r => r.id -> r.token).toMap
    )

  withDb(
    "the callback waits from the open and is released once, when the closed batch's last member ends, with the counts by outcome"
  ) { db =>
    val batches = Batches(db)
    val callbacks = TaskQueue[IO, String](db, "done")
    val a = TaskQueue[IO, String](db, "a")
    val b = TaskQueue[IO, String](db, "b")
    val sql = new Sql(db.schema)
    for
      batch <- batches.open(callbacks, NewTask("report"))
      opened <- progress(db, batch)
      waiting <- live(db, opened.callback)
      inA <- batches.add(batch, a, Vector("ok", "fails", "cancelled").map(NewTask(_, maxAttempts = 1)))
      inB <- batches.add(batch, b, Vector(NewTask("kept"), NewTask("plain")))
      ids = (inA ++ inB).map(_.taskId)
      closed <- batches.close(batch)
      nothingYet <- claim(db, "done")
      _ <- TaskAdmin(db).tasks.cancel(ids(2), "not needed")
      tokensA <- claim(db, "a")
      tokensB <- claim(db, "b")
      // completed without keepCompleted (the row is the trigger's), completed kept, dead: each member's end counted
      _ <-
      (sql.complete(Array(tokensA(ids(0))), keep = false, keyed = false) *>
        sql.fail(Array(tokensA(ids(1))), Array("boom"), Array(0L)) *>
        sql.complete(Array(tokensB(ids(3))), keep = true, keyed = false)).transact(TestDatabase.admin)
      beforeLast <- progress(db, batch)
      stillWaiting <- live(db, opened.callback)
      _ <- sql.complete(Array(tokensB(ids(4))), keep = false, keyed = false).transact(TestDatabase.admin)
      ended <- progress(db, batch)
      released <- live(db, opened.callback)
      callback <- claim(db, "done")
      again <- batches.close(batch)
    yield
      assertEquals(
        (opened.members, opened.closed, opened.ended, opened.createdAt.isAfter(java.time.Instant.EPOCH)),
        (0L, false, false, true)
      )
      assertEquals(waiting, Vector(("waiting", 1)))
      assertEquals((closed.members, closed.closed, closed.ended), (5L, true, false))
      assertEquals(nothingYet, Map.empty[Long, Long])
      assertEquals(
        (beforeLast.completed, beforeLast.dead, beforeLast.cancelled, beforeLast.pending),
        (2L, 1L, 1L, 1L)
      )
      assertEquals(stillWaiting, Vector(("waiting", 1)))
      assertEquals(
        (ended.members, ended.completed, ended.dead, ended.cancelled, ended.ended, ended.succeeded),
        (5L, 3L, 1L, 1L, true, false)
      )
      assertEquals(released, Vector(("available", 0)))
      assertEquals(callback.keySet, Set(opened.callback))
      assertEquals(again, ended)
  }

  withDb("a batch closed with no member ends at its close; a batch never closed never ends") { db =>
    val batches = Batches(db)
    val callbacks = TaskQueue[IO, String](db, "done")
    val q = TaskQueue[IO, String](db, "q")
    for
      empty <- batches.open(callbacks, NewTask("empty"))
      open <- batches.open(callbacks, NewTask("open"))
      member <- batches.add(open, q, Vector(NewTask("m"))).map(_.head.taskId)
      tokens <- claim(db, "q")
      _ <- new Sql(db.schema).complete(Array(tokens(member)), keep = false, keyed = false).transact(
        TestDatabase.admin
      )
      closed <- batches.close(empty)
      stillOpen <- progress(db, open)
      emptyCallback <- live(db, closed.callback)
      openCallback <- live(db, stillOpen.callback)
    yield
      assertEquals((closed.members, closed.ended, closed.succeeded), (0L, true, true))
      assertEquals(emptyCallback, Vector(("available", 0)))
      assertEquals(
        (stillOpen.members, stillOpen.completed, stillOpen.closed, stillOpen.ended),
        (1L, 1L, false, false)
      )
      assertEquals(openCallback, Vector(("waiting", 1)))
  }

  withDb(
    "a handler that closes its own batch in the transaction of its completion, the last member, ends the batch once"
  ) { db =>
    val batches = Batches(db)
    val callbacks = TaskQueue[IO, String](db, "done")
    val q = TaskQueue[IO, String](db, "q")
    for
      batch <- batches.open(callbacks, NewTask("done"))
      _ <- batches.add(batch, q, Vector(NewTask("first"), NewTask("last")))
      seen <- Ref[IO].of(Vector.empty[(String, Option[BatchProgress])])
      // "first" completes as usual; "last" waits for it to be counted, then closes the batch and completes
      // in one transaction
      _ <- TestWorkers.statsAfterRun(DurableWorker.start[IO, String, Unit](db, TestWorkers.config("q")) {
        source =>
          Pipeline(source).process { job =>
            job.batch.transact(db.transactor).flatMap(now => seen.update(_ :+ (job.payload -> now))) *>
              (if job.payload != "last" then IO.unit
               else
                 Eventually.until("the first member counted", progress(db, batch), 30.seconds)(_.completed ==
                   1L) *>
                   (job.batch.flatMap(b => batches.closeIn(b.get.id)) *> job.completeIn).transact(
                     db.transactor
                   )
                     .void)
          }.withLimit(Limit.fixed(2))
      })
      read <- Ref[IO].of(Vector.empty[Option[BatchProgress]])
      _ <- TestWorkers.statsAfterRun(DurableWorker.start[IO, String, Unit](db, TestWorkers.config("done")) {
        source =>
          Pipeline(source).process(job => job.batch.transact(db.transactor).flatMap(b => read.update(_ :+ b)))
      })
      members <- seen.get
      callbackRead <- read.get
      ended <- progress(db, batch)
    yield
      assertEquals(members.map(_._1).sorted, Vector("first", "last"))
      assert(members.forall(_._2.exists(p => p.id == batch && !p.closed)), members)
      assertEquals(callbackRead, Vector(Some(ended)))
      assertEquals((ended.members, ended.completed, ended.ended), (2L, 2L, true))
  }

  withDb(
    "a member adds tasks to its own batch before the close; each counts, and the callback waits for them all"
  ) { db =>
    val batches = Batches(db)
    val callbacks = TaskQueue[IO, String](db, "done")
    val q = TaskQueue[IO, String](db, "q")
    for
      batch <- batches.open(callbacks, NewTask("done"))
      _ <- batches.add(batch, q, Vector(NewTask("spawn")))
      _ <- TestWorkers.statsAfterRun(DurableWorker.start[IO, String, Unit](db, TestWorkers.config("q")) {
        source =>
          Pipeline(source).process { job =>
            if job.payload != "spawn" then IO.unit
            else
              job.batch.flatMap(b =>
                batches.addIn(b.get.id, q, Vector(NewTask("child-1"), NewTask("child-2")))
              )
                .transact(db.transactor)
                .void
          }
      })
      beforeClose <- progress(db, batch)
      closed <- batches.close(batch)
    yield
      assertEquals((beforeClose.members, beforeClose.completed, beforeClose.ended), (3L, 3L, false))
      assertEquals((closed.members, closed.completed, closed.ended), (3L, 3L, true))
  }

  withDb(
    "a graph added to a batch: its tasks are members, and one cancelled by its dead parent counts as cancelled"
  ) { db =>
    val batches = Batches(db)
    val callbacks = TaskQueue[IO, String](db, "done")
    val q = TaskQueue[IO, String](db, "q")
    val graph = TaskGraph.empty
      .add("root", q, NewTask("root", maxAttempts = 1))
      .add("child", q, NewTask("child"), after = Vector(After.completed("root")))
      .add("report", q, NewTask("report"), after = Vector(After.finished("root")))
    for
      batch <- batches.open(callbacks, NewTask("done"))
      handles <- batches.addGraph(batch, graph)
      _ <- batches.close(batch)
      _ <- TestWorkers.statsAfterRun(DurableWorker.start[IO, String, Unit](db, TestWorkers.config("q")) {
        source =>
          Pipeline(source).process(job =>
            IO.raiseError(new RuntimeException("boom")).whenA(job.payload == "root")
          )
      })
      ended <- progress(db, batch)
      inBatch <- Rows.count(db, "tasks", "batch IS NOT NULL")
    yield
      assertEquals(handles.keySet, Set("root", "child", "report"))
      assertEquals(
        (ended.members, ended.completed, ended.dead, ended.cancelled, ended.ended),
        (3L, 1L, 1L, 1L, true)
      )
      assertEquals(inBatch, 0L)
  }

  withDb(
    "a member whose unique key is held is no member; an operator's retry of a dead member runs outside its ended batch"
  ) { db =>
    val batches = Batches(db)
    val callbacks = TaskQueue[IO, String](db, "done")
    val q = TaskQueue[IO, String](db, "q")
    for
      holder <- q.enqueue(NewTask("holder", uniqueKey = Some("k"))).map(_.taskId)
      batch <- batches.open(callbacks, NewTask("done"))
      added <-
        batches.add(batch, q, Vector(NewTask("dup", uniqueKey = Some("k")), NewTask("dies", maxAttempts = 1)))
      _ <- batches.close(batch)
      _ <- TestWorkers.statsAfterRun(DurableWorker.start[IO, String, Unit](db, TestWorkers.config("q")) {
        source =>
          Pipeline(source).process(job =>
            IO.raiseError(new RuntimeException("boom")).whenA(job.payload == "dies")
          )
      })
      ended <- progress(db, batch)
      retried <- TaskAdmin(db).tasks.retry(added(1).taskId)
      _ <- TestWorkers.statsAfterRun(DurableWorker.start[IO, String, Unit](db, TestWorkers.config("q")) {
        source => Pipeline(source).process(_ => IO.unit)
      })
      after <- progress(db, batch)
      states <-
        Rows.query[String](s"SELECT state::text FROM ${db.schema("finished")} WHERE id = ${added(1).taskId}")
    yield
      assertEquals(added.head, Enqueued.Duplicate(holder))
      assertEquals((ended.members, ended.dead, ended.ended), (1L, 1L, true))
      assertEquals(retried, Retry.Retried)
      assertEquals(states, Vector("completed"))
      assertEquals(after, ended)
  }

  withDb(
    "cancelling a batch closes it, cancels its waiting members at once and asks the running one's worker; the callback reads them cancelled"
  ) { db =>
    val batches = Batches(db, Operator("ops"))
    val callbacks = TaskQueue[IO, String](db, "done")
    val q = TaskQueue[IO, String](db, "q")
    val sql = new Sql(db.schema)
    for
      batch <- batches.open(callbacks, NewTask("done"))
      ids <- batches.add(batch, q, Vector("running", "done", "a", "b").map(NewTask(_))).map(_.map(_.taskId))
      tokens <- claim(db, "q")
      _ <- sql.complete(Array(tokens(ids(1))), keep = false, keyed = false).transact(TestDatabase.admin)
      // the first stays running; the last two are handed back, waiting to run again
      _ <- sql.handBack(Array(tokens(ids(2)), tokens(ids(3)))).transact(TestDatabase.admin)
      answer <- batches.cancel(batch)
      mid <- progress(db, batch)
      // the running member's worker ends it cancelled, as a failed attempt whose cancel was requested
      _ <- sql.fail(Array(tokens(ids(0))), Array("interrupted"), Array(0L)).transact(TestDatabase.admin)
      ended <- progress(db, batch)
      audit <- Rows.query[(Long, String, String)](
        s"SELECT task, outcome, detail FROM ${db.schema("audit")} WHERE action = 'cancel' ORDER BY id"
      )
      again <- batches.cancel(batch, "again")
    yield
      assertEquals(answer, GroupCancel(cancelled = 2, requested = 1, ended = 0))
      assertEquals(
        (mid.closed, mid.completed, mid.cancelled, mid.pending, mid.ended),
        (true, 1L, 2L, 1L, false)
      )
      assertEquals((ended.completed, ended.cancelled, ended.ended), (1L, 3L, true))
      assertEquals(
        audit,
        Vector(
          (ids(0), "requested", "batch cancelled by ops"),
          (ids(2), "done", "batch cancelled by ops"),
          (ids(3), "done", "batch cancelled by ops")
        )
      )
      assertEquals(again, GroupCancel(0, 0, 0))
  }

  withDb(
    "a worker's pruner deletes the batches ended past Retention.batches whose callback has left tasks; Batches.prune does too"
  ) { db =>
    val batches = Batches(db)
    val callbacks = TaskQueue[IO, String](db, "done")
    val every = weir.Service.Settings.periodic("prune", 100.millis)
    val log = new WorkerLog[IO](org.typelevel.log4cats.noop.NoOpFactory[IO], "done", 0L)
    def ended(b: BatchId, ago: String) =
      Rows.exec(
        s"UPDATE ${db.schema("batches")} SET ended_at = now() - interval '$ago' WHERE id = ${b.value}"
      )
    def finish(b: BatchId) = progress(db, b).flatMap(p => TaskAdmin(db).tasks.cancel(p.callback)).void
    for
      // old, its callback finished: pruned; old, its callback still to run: kept; recent: kept; open: kept
      old <- batches.open(callbacks, NewTask("old"))
      running <- batches.open(callbacks, NewTask("running"))
      recent <- batches.open(callbacks, NewTask("recent"))
      open <- batches.open(callbacks, NewTask("open"))
      _ <- Vector(old, running, recent).traverse_(batches.close)
      _ <- finish(old) *> finish(recent) *> ended(old, "2 hours") *> ended(running, "2 hours")
      _ <- Pruner.resource(
        db.run,
        new AdminSql(db.schema),
        Retention(batches = 1.hour),
        log,
        new Counters,
        every
      )
        .use(_ => Eventually.until("the old batch pruned", batches.progress(old), 30.seconds)(_.isEmpty))
      afterWorker <- Vector(running, recent, open).traverse(batches.progress).map(_.map(_.isDefined))
      pruned <- batches.prune(Duration.Zero)
      afterCall <- Vector(running, recent, open).traverse(batches.progress).map(_.map(_.isDefined))
    yield
      assertEquals(afterWorker, Vector(true, true, true))
      assertEquals(pruned, 1L)
      assertEquals(afterCall, Vector(true, false, true))
  }
