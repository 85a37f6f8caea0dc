package weir.postgres

import cats.effect.{Deferred, IO, Ref}
import cats.syntax.all.*
import doobie.Fragment
import doobie.implicits.*
import weir.{Disposition, Limit, Pipeline, TaskInterrupted}
import weir.postgres.internal.{CancelListener, Sql}
import weir.testkit.Eventually

import scala.concurrent.duration.*

/**
 * Cancelling a running task ([[TaskAdmin.cancel]]) against a real server: the worker hears of it by
 * notification, or by its heartbeat when it does not listen, and cancels the handler (its finalizer runs);
 * the task ends cancelled with the reason, never retried. A claimed task told before it starts never
 * starts. Whatever finishes a claim whose cancel was requested (a failure, a hand-back, a snooze, the
 * rescue of a dead worker) cancels it instead of putting it back; a completion that comes first stands.
 */
class CancelSuite extends DbSuite:

  private def run[A](db: Database[IO], program: doobie.ConnectionIO[A]): IO[A] =
    program.transact(db.transactor)

  /** The server's clock now, in microseconds since the epoch. */
  private def serverNow: IO[Long] =
    sql"SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint".query[Long].unique.transact(
      TestDatabase.admin
    )

  /**
   * Waits for the first beat of `worker` that began after `since` (microseconds, the server's clock), and
   * returns when it began. A beat reads and writes in one statement whose snapshot is taken after it
   * began: it has seen whatever committed before `since`.
   */
  private def beatAfter(db: Database[IO], worker: Long, since: Long): IO[Long] =
    val at = Fragment
      .const(
        s"SELECT (extract(epoch FROM heartbeat_at) * 1000000)::bigint FROM ${db.schema("workers")} WHERE id = $worker"
      )
      .query[Long]
      .unique
      .transact(TestDatabase.admin)
    Eventually.until(s"a beat of worker $worker after $since", at, within = 20.seconds)(_ > since)

  /**
   * Runs a worker on queue `q` whose handler blocks on the task "slow" until cancelled (recording its
   * finalizer) and completes the others; cancels "slow" once it runs; returns the cancel's answer, the
   * outcomes, the worker's stats and whether the finalizer ran.
   */
  private def cancelRunning(db: Database[IO], config: WorkerConfig, within: FiniteDuration = 30.seconds) =
    for
      ids <- TaskQueue[IO, String](db, config.queue)
        .enqueueMany(Vector(NewTask("a"), NewTask("slow"), NewTask("b")))
        .map(_.map(_.taskId))
      started <- Deferred[IO, Unit]
      finalized <- Ref[IO].of(false)
      result <- DurableWorker.start[IO, String, Unit](db, config) { source =>
        Pipeline(source).process { job =>
          if job.payload == "slow" then
            (started.complete(()) *> IO.never[Unit]).onCancel(finalized.set(true))
          else IO.unit
        }.withLimit(Limit.fixed(4))
      }.use { w =>
        for
          _ <- started.get.timeout(30.seconds)
          answer <- TaskAdmin(db).tasks.cancel(ids(1), "runaway")
          _ <- w.running.join.timeout(within)
        yield (answer, w)
      }
      // read once the worker is released: see TestWorkers.statsAfterRun
      stats <- result._2.stats
      done <- finalized.get
    yield (ids, result._1, stats, done)

  withDb("a running task's cancel reaches its worker by notification: interrupted, finalized, cancelled") {
    db =>
      for
        // heartbeats 15 s apart, the first 15 s in: within the 10 s the run is given, only the notification
        // can have told the worker
        result <- cancelRunning(
          db,
          TestWorkers.config("n").copy(heartbeat = 30.seconds, deadAfter = 90.seconds, lease = 120.seconds),
          within = 10.seconds
        )
        done <- Rows.finished(db)
      yield
        val (_, answer, stats, finalized) = result
        assertEquals(answer, Cancel.Requested)
        assert(finalized, "the handler's finalizer did not run")
        assertEquals(
          done.map(d => (d._1, d._2)),
          Vector("\"a\"" -> "completed", "\"slow\"" -> "cancelled", "\"b\"" -> "completed")
        )
        val slowErrors = done(1)._4
        assert(slowErrors.contains("cancelled: runaway"), slowErrors)
        assertEquals((stats.cancelled, stats.completed, stats.retried, stats.dead), (1L, 2L, 0L, 0L))
  }

  withDb("a worker that does not listen hears of the cancel at its next heartbeat") { db =>
    for
      result <- cancelRunning(db, TestWorkers.config("h").copy(listen = false))
      done <- Rows.finished(db)
    yield
      val (_, answer, stats, finalized) = result
      assertEquals(answer, Cancel.Requested)
      assert(finalized, "the handler's finalizer did not run")
      assertEquals(done.map(_._2), Vector("completed", "cancelled", "completed"))
      assertEquals(stats.cancelled, 1L)
  }

  withDb("the outcome is Interrupted with the reason, and in-memory retries do not run it again") { db =>
    val config = TestWorkers.config("o")
    for
      id <- TaskQueue[IO, String](db, "o").enqueue(NewTask("slow")).map(_.taskId)
      calls <- Ref[IO].of(0)
      started <- Deferred[IO, Unit]
      outcome <- DurableWorker.start[IO, String, Unit](db, config) { source =>
        Pipeline(source)
          .process(_ => calls.update(_ + 1) *> started.complete(()) *> IO.never[Unit])
          .withRetry(weir.Retry.exponential(Duration.Zero, maxAttempts = 5, maxDelay = Duration.Zero))
      }.use(w =>
        started.get.timeout(30.seconds) *> TaskAdmin(db).tasks.cancel(id, "stop it") *>
          w.running.join.timeout(30.seconds).map(_.failures)
      )
      n <- calls.get
      done <- Rows.finished(db)
    yield
      assertEquals(n, 1)
      assertEquals(
        outcome.map(f => (f.error.asInstanceOf[TaskInterrupted].reason, f.disposition)),
        Vector(("cancelled: stop it", Disposition.Interrupted))
      )
      assertEquals(done.map(d => (d._2, d._3)), Vector(("cancelled", 1)))
  }

  withDb("a claimed task told to stop before it starts never starts, and is cancelled uncounted") { db =>
    // one task at a time: the second waits in the worker's buffer, claimed, while the first runs. Beats
    // every 500 ms: a loaded machine's late beat would refuse claims for a reason of its own
    val config = TestWorkers.config("b").copy(heartbeat = 1.second, deadAfter = 3.seconds)
    for
      ids <- TaskQueue[IO, String](db, "b")
        .enqueueMany(Vector(NewTask("first"), NewTask("second")))
        .map(_.map(_.taskId))
      ran <- Ref[IO].of(Vector.empty[String])
      first <- Deferred[IO, Unit]
      release <- Deferred[IO, Unit]
      stats <- DurableWorker.start[IO, String, Unit](db, config) { source =>
        Pipeline(source).process { job =>
          ran.update(_ :+ job.payload) *>
            (if job.payload == "first" then first.complete(()) *> release.get else IO.unit)
        }.withLimit(Limit.fixed(1))
      }.use { w =>
        for
          _ <- first.get.timeout(30.seconds)
          claimed <- Rows.count(db, "tasks", s"id = ${ids(1)} AND state = 'running'")
          _ = assertEquals(claimed, 1L, "the second task was not claimed while the first ran")
          answer <- TaskAdmin(db).tasks.cancel(ids(1))
          _ = assertEquals(answer, Cancel.Requested)
          requested <- Rows.count(db, "tasks", s"id = ${ids(1)} AND cancel_requested IS NOT NULL")
          _ = assertEquals(requested, 1L)
          // the worker hears of it by notification, or at its next beat: a beat begun after the request
          // committed has seen it, and the heartbeat begins its next beat only once it has acted on that one
          asked <- serverNow
          _ <- beatAfter(db, w.id, asked).flatMap(beatAfter(db, w.id, _))
          _ <- release.complete(())
          _ <- w.running.join.timeout(30.seconds)
        yield w
      }.flatMap(_.stats) // read once the worker is released: see TestWorkers.statsAfterRun
      order <- ran.get
      done <- Rows.finished(db)
    yield
      assertEquals(order, Vector("first"))
      assertEquals(done.map(d => (d._2, d._3)), Vector(("completed", 1), ("cancelled", 0)))
      assertEquals(stats.cancelled, 1L)
      // the second's refusal, and any of a claim whose beat came late on a loaded machine (handed back and
      // claimed again: the order and the attempts above are what such a refusal cannot change)
      assert(stats.refused >= 1L, stats.toString)
  }

  withDb(
    "every way back to available cancels a requested task instead; a completion that comes first stands"
  ) {
    db =>
      val sql = new Sql(db.schema)
      val admin = TaskAdmin(db)
      for
        ids <- TaskQueue[IO, Int](db, "w").enqueueMany((1 to 6).map(NewTask(_))).map(_.map(_.taskId))
        owner <- run(db, sql.register("w", 1000))
        claim <- run(db, sql.claim("w", owner, 6, 60000))
        tokens = claim.rows.sortBy(_.id).map(_.token)
        answers <- ids.traverse(admin.tasks.cancel(_, "no more"))
        failed <- run(db, sql.fail(Array(tokens(0)), Array("boom"), Array(0L)))
        released <- run(db, sql.handBack(Array(tokens(1))))
        snoozed <- run(db, sql.snooze(Array(tokens(2)), Array(1000L)))
        completed <- run(db, sql.complete(Array(tokens(3)), keep = true, keyed = false))
        // the worker is gone: its heartbeat is an hour old
        _ <- Rows.exec(
          s"UPDATE ${db.schema("workers")} SET heartbeat_at = now() - interval '1 hour' WHERE id = $owner"
        )
        rescued <- run(db, sql.rescue(10000, 1000, leases = true))
        left <- Rows.count(db, "tasks")
        done <- Rows.finished(db)
      yield
        assertEquals(answers, Vector.fill(6)(Cancel.Requested))
        assertEquals(failed, (0, 0, 1))
        assertEquals(released, (0, 1))
        assertEquals(snoozed, (0, 1))
        assertEquals(completed, 1)
        assertEquals(rescued, (0, 0, 2))
        assertEquals(left, 0L)
        assertEquals(
          done.map(d => (d._1, d._2, d._3)),
          Vector(
            ("1", "cancelled", 1),
            ("2", "cancelled", 0),
            ("3", "cancelled", 0),
            ("4", "completed", 1),
            ("5", "cancelled", 1),
            ("6", "cancelled", 1)
          )
        )
        // the failure's own error is kept before the cancel's
        assert(done(0)._4.indexOf("boom") < done(0)._4.indexOf("cancelled: no more"), done(0)._4)
        assert(done.filter(_._2 == "cancelled").forall(_._4.contains("cancelled: no more")), done)
  }

  withDb("a cancel of an available task keeps its reason; retrying it runs it again, no longer cancelled") {
    db =>
      val admin = TaskAdmin(db)
      for
        id <- TaskQueue[IO, Int](db, "r").enqueue(NewTask(1)).map(_.taskId)
        answer <- admin.tasks.cancel(id, "not today")
        cancelled <- Rows.finished(db)
        retried <- admin.tasks.retry(id)
        again <- Rows.count(db, "tasks", s"id = $id AND state = 'available' AND cancel_requested IS NULL")
      yield
        assertEquals(answer, Cancel.Cancelled)
        assertEquals(cancelled.map(_._2), Vector("cancelled"))
        assert(cancelled.head._4.contains("cancelled: not today"), cancelled)
        assertEquals((retried, again), (Retry.Retried, 1L))
  }

  test("a cancel's notification names the claim's token, then the reason") {
    assertEquals(CancelListener.cancel("42 too slow, sorry"), Some(42L -> "too slow, sorry"))
    assertEquals(CancelListener.cancel("42"), Some(42L -> ""))
    assertEquals(CancelListener.cancel("x y"), None)
  }
