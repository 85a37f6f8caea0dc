package weir.postgres

import cats.effect.IO
import doobie.*
import doobie.implicits.*
import weir.postgres.internal.{AdminSql, Counters, Pruner, Sql, WorkerLog}
import weir.testkit.Eventually

import scala.concurrent.duration.*

class AdminSuite extends DbSuite:

  withDb("stats count each queue's tasks by state") { db =>
    val sql = new Sql(db.schema)
    val a = TaskQueue[IO, Int](db, "a")
    for
      _ <- a.enqueueMany((1 to 5).map(NewTask(_)))
      _ <- a.enqueue(NewTask(6, delay = 1.hour))
      _ <- TaskQueue[IO, Int](db, "b").enqueue(NewTask(7))
      owner <- sql.register("w", 1000).transact(db.transactor)
      claimed <- sql.claim("a", owner, 2, 60000).map(_.rows).transact(db.transactor)
      _ <- sql.complete(Array(claimed.head.token), keep = true, keyed = false).transact(db.transactor)
      _ <- sql.fail(Array(claimed(1).token), Array("x"), Array(-1L)).transact(db.transactor)
      stats <- TaskAdmin(db).overview.stats
    yield assertEquals(
      stats,
      Vector(QueueStats("a", 3, 1, 0, 1, 1, 0), QueueStats("b", 1, 0, 0, 0, 0, 0))
    )
  }

  withDb(
    "cancel moves a waiting task to cancelled, requests a running one's, and tells a finished or unknown one"
  ) { db =>
    val sql = new Sql(db.schema)
    val admin = TaskAdmin(db)
    for
      ids <- TaskQueue[IO, Int](db, "c").enqueueMany(Vector(NewTask(1), NewTask(2))).map(_.map(_.taskId))
      owner <- sql.register("w", 1000).transact(db.transactor)
      _ <- sql.claim("c", owner, 1, 60000).map(_.rows).transact(db.transactor)
      running <- admin.tasks.cancel(ids(0), "too slow")
      cancelled <- admin.tasks.cancel(ids(1))
      again <- admin.tasks.cancel(ids(1))
      missing <- admin.tasks.cancel(-1L)
      requested <- Fragment.const(s"SELECT cancel_requested FROM ${db.schema("tasks")} WHERE id = ${ids(0)}")
        .query[Option[String]].unique.transact(db.transactor)
      done <- Rows.finished(db)
      empty <- IO.defer(admin.tasks.cancel(ids(0), "")).attempt
    yield
      assertEquals(
        (running, cancelled, again, missing),
        (Cancel.Requested, Cancel.Cancelled, Cancel.Finished(FinishedState.Cancelled), Cancel.NotFound)
      )
      assertEquals(requested, Some("too slow"))
      assertEquals(done.map(_._2), Vector("cancelled"))
      assertEquals(
        empty.left.map(_.getMessage),
        Left("invalid TaskActions.cancel: a cancel's reason must not be empty, was: ''")
      )
  }

  withDb("retry puts a dead task back with fresh attempts, unless its unique key is held again") { db =>
    val sql = new Sql(db.schema)
    val queue = TaskQueue[IO, Int](db, "r")
    val admin = TaskAdmin(db)
    for
      ids <- queue
        .enqueueMany(Vector(NewTask(1, maxAttempts = 1), NewTask(2, maxAttempts = 1, uniqueKey = Some("u"))))
        .map(_.map(_.taskId))
      owner <- sql.register("w", 1000).transact(db.transactor)
      claimed <- sql.claim("r", owner, 2, 60000).map(_.rows).transact(db.transactor)
      _ <- sql.fail(claimed.map(_.token).toArray, Array("e1", "e2"), Array(0L, 0L)).transact(db.transactor)
      _ <- queue.enqueue(NewTask(3, uniqueKey = Some("u")))
      back <- admin.tasks.retry(ids(0))
      clash <- admin.tasks.retry(ids(1))
      tasks <- Rows.tasks(db)
      done <- Rows.finished(db)
    yield
      assertEquals((back, clash), (Retry.Retried, Retry.KeyHeld))
      val retried = tasks.find(_._1 == ids(0)).getOrElse(fail("the retried task is not back"))
      assertEquals((retried._2, retried._3), ("available", 0))
      assert(retried._5.contains("e1"), "the retried task lost its errors")
      assertEquals(done.map(d => (d._1, d._2)), Vector(("2", "dead")))
  }

  withDb("discard deletes a dead task; prune deletes finished tasks older than asked, in batches, by state") {
    db =>
      val admin = TaskAdmin(db)
      val f = db.schema("finished")
      for
        _ <- Rows.exec(
          s"""INSERT INTO $f (id, queue, payload, priority, state, attempt, max_attempts, errors, created_at, finished_at)
            SELECT g, 'p', '1', 0, CASE WHEN g % 2 = 0 THEN 'completed' ELSE 'dead' END::${db.schema(
              "finished_state"
            )},
                   1, 1, '[]', now(), now() - (g || ' minutes')::interval
            FROM generate_series(1, 2500) AS g"""
        )
        discarded <- admin.tasks.discard(1L)
        again <- admin.tasks.discard(1L)
        // completed rows at least 100 minutes old by the time the prune runs: ids 100, 102, ..., 2500
        pruned <- admin.prune(100.minutes, Set(FinishedState.Completed), batch = 300)
        left <- Rows.count(db, "finished")
        oldCompleted <-
          Rows.count(db, "finished", "state = 'completed' AND finished_at < now() - interval '100 minutes'")
      yield
        assertEquals((discarded, again), (Discard.Discarded, Discard.NotFound))
        assertEquals(pruned, 1201L)
        assertEquals(oldCompleted, 0L)
        assertEquals(left, 2500L - 1 - 1201)
  }

  withDb("a worker's pruner deletes each state's finished tasks past its retention, and keeps the rest") {
    db =>
      val f = db.schema("finished")
      // half a minute off the planted rows' whole minutes, so no row sits on a boundary
      val retention = Retention(completed = 10.5.minutes, dead = 60.5.minutes, cancelled = 1440.5.minutes)
      for
        _ <- Rows.exec(
          s"""INSERT INTO $f (id, queue, payload, priority, state, attempt, max_attempts, errors, created_at, finished_at)
            SELECT g, 'p', '1', 0, (ARRAY['completed', 'dead', 'cancelled'])[g % 3 + 1]::${db.schema(
              "finished_state"
            )},
                   1, 1, '[]', now(), now() - (g || ' minutes')::interval
            FROM generate_series(1, 3000) AS g"""
        )
        log = new WorkerLog[IO](org.typelevel.log4cats.noop.NoOpFactory[IO], "p", 0L)
        every = weir.Service.Settings.periodic("prune", 100.millis)
        _ <- Pruner
          .resource(db.run, new AdminSql(db.schema), retention, log, new Counters, every)
          .use(_ =>
            Eventually.until(
              "at most 503 finished tasks",
              Rows.count(db, "finished"),
              60.seconds,
              100.millis
            )(
              _ <= 503L
            )
          )
        kept <- Fragment
          .const(
            s"SELECT state::text, bool_and(finished_at > now() - interval '2 days') FROM $f GROUP BY 1 ORDER BY 1"
          )
          .query[(String, Boolean)].to[Vector].transact(TestDatabase.admin)
        counts <- Fragment
          .const(s"SELECT state::text, count(*) FROM $f GROUP BY 1 ORDER BY 1")
          .query[(String, Long)].to[Vector].transact(TestDatabase.admin)
      yield
        // completed (g % 3 == 0) kept while g <= 10: 3, 6, 9; dead (g % 3 == 1) while g <= 60: 20 rows;
        // cancelled (g % 3 == 2) while g <= 1440: 480 rows
        assertEquals(counts, Vector(("cancelled", 480L), ("completed", 3L), ("dead", 20L)))
        assert(kept.forall(_._2), kept.toString)
  }

  withDb(
    "workers lists each registered worker with its running tasks and whether its session holds its lock"
  ) { db =>
    val sql = new Sql(db.schema)
    val queue = TaskQueue[IO, Int](db, "w")
    val blocked = WorkerConfig(queue = "w", claimBatch = 3, heartbeat = 200.millis, deadAfter = 1.second)
    for
      _ <- queue.enqueueMany((1 to 3).map(NewTask(_)))
      gate <- cats.effect.Deferred[IO, Unit]
      started <- cats.effect.std.CountDownLatch[IO](3)
      // a worker of the library, holding three tasks, and a row of a worker that never opened a session
      listed <- DurableWorker.start[IO, Int, Unit](db, blocked)(
        weir.Pipeline(_).process(_ => started.release *> gate.get).withLimit(weir.Limit.fixed(3))
      ).use { live =>
        for
          _ <- started.await
          silent <- sql.register("silent", 1000).transact(db.transactor)
          all <- TaskAdmin(db).overview.workers
          _ <- gate.complete(())
        yield (live.id, silent, all)
      }
      (live, silent, all) = listed
      after <- TaskAdmin(db).overview.workers
    yield
      assertEquals(
        all.map(w => (w.id, w.sessionHeld, w.running)),
        Vector((live, true, 3L), (silent, false, 0L))
      )
      assertEquals(all.map(_.name).last, "silent")
      assert(all.forall(w => !w.heartbeatAt.isBefore(w.startedAt)), all.toString)
      // the live worker deregistered on release; the silent row stays until it is found dead
      assertEquals(after.map(_.id), Vector(silent))
  }
