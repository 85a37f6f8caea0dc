package weir.postgres

import cats.effect.{IO, Ref}
import cats.effect.std.CountDownLatch
import cats.syntax.all.*
import weir.{Limit, Pipeline, Retry}
import weir.testkit.Eventually

import scala.concurrent.duration.*

class WorkerSuite extends DbSuite:

  def config(queue: String = "q"): WorkerConfig = TestWorkers.config(queue)

  /**
   * Makes every completion fail, as an unreachable database would (completing deletes the task's row);
   * `DROP TRIGGER refuse` ends it.
   */
  private def refuseDeletes(db: Database[IO]): IO[Unit] =
    val refuse = db.schema("refuse_deletes")
    Rows.exec(
      s"CREATE FUNCTION $refuse() RETURNS trigger LANGUAGE plpgsql AS $$$$ BEGIN RAISE EXCEPTION 'refused'; END $$$$"
    ) *> Rows.exec(
      s"CREATE TRIGGER refuse BEFORE DELETE ON ${db.schema("tasks")} FOR EACH ROW EXECUTE FUNCTION $refuse()"
    ).void

  /**
   * Lets completions through again ([[refuseDeletes]]) and has a worker finish every task of `queue`:
   * nothing the refusal left behind is lost. Returns the finished rows.
   */
  private def finishAll(db: Database[IO], queue: String): IO[Vector[(String, String, Int, String)]] =
    Rows.exec(s"DROP TRIGGER refuse ON ${db.schema("tasks")}") *>
      DurableWorker
        .start[IO, Int, Unit](db, config(queue))(Pipeline(_).process(_ => IO.unit))
        .use(_.running.join) *>
      Rows.finished(db)

  withDb("each attempt names its worker: a failure's error entry, and the finished row its last attempt's") {
    db =>
      val queue = TaskQueue[IO, Int](db, "q")
      // 1 fails once then completes; 2 fails twice and is dead
      def handler(job: Job[Int]): IO[Unit] =
        if job.payload == 2 || job.attempt == 1 then
          IO.raiseError(new RuntimeException(s"boom ${job.attempt}"))
        else IO.unit
      for
        _ <- queue.enqueueMany(Vector(NewTask(1, maxAttempts = 2), NewTask(2, maxAttempts = 2)))
        worker <- DurableWorker
          .start[IO, Int, Unit](db, config())(Pipeline(_).process(handler).withRetry(Retry.none))
          .use(w => w.running.join.as(w.id))
        rows <- Rows.query[(String, String, Option[Long], String)](
          s"""SELECT payload::text, state::text, worker,
                (SELECT string_agg((e ->> 'attempt') || ':' || (e ->> 'worker'), ',') FROM jsonb_array_elements(errors) AS e)
              FROM ${db.schema("finished")} ORDER BY id"""
        )
      yield assertEquals(
        rows,
        Vector(
          ("1", "completed", Some(worker), s"1:$worker"),
          ("2", "dead", Some(worker), s"1:$worker,2:$worker")
        )
      )
  }

  withDb("every task ends exactly once, completed or dead, across two workers with failures and retries") {
    db =>
      val queue = TaskQueue[IO, Int](db, "q")
      val n = 400
      // payload % 7 == 0 always fails (dead after 3 attempts); payload % 5 == 0 fails its first attempt only
      def handler(runs: Ref[IO, Map[Int, Int]], succeeded: Ref[IO, Map[Int, Int]])(job: Job[Int]): IO[Unit] =
        runs.update(m => m.updated(job.payload, m.getOrElse(job.payload, 0) + 1)) *> {
          if job.payload % 7 == 0 then IO.raiseError(new RuntimeException(s"boom ${job.payload}"))
          else if job.payload % 5 == 0 && job.attempt == 1 then IO.raiseError(new RuntimeException("first"))
          else succeeded.update(m => m.updated(job.payload, m.getOrElse(job.payload, 0) + 1))
        }
      for
        _ <- queue.enqueueMany((1 to n).map(i => NewTask(i, maxAttempts = 3)))
        runs <- Ref[IO].of(Map.empty[Int, Int])
        succeeded <- Ref[IO].of(Map.empty[Int, Int])
        // heartbeats many times a second: each one races the completions for claims that were just finished
        worker = DurableWorker.start[IO, Int, Unit](db, config().copy(heartbeat = 25.millis)) { source =>
          Pipeline(source).process(handler(runs, succeeded)).withLimit(Limit.fixed(8)).withBuffer(16)
        }
        stats <- (TestWorkers.statsAfterRun(worker), TestWorkers.statsAfterRun(worker)).parTupled
        done <- Rows.finished(db)
        left <- Rows.count(db, "tasks")
        ok <- succeeded.get
        ran <- runs.get
      yield
        assertEquals(left, 0L)
        assertEquals(done.size, n)
        assertEquals((stats._1.taken, stats._2.taken), (0L, 0L), "no claim was taken from a live worker")
        val dead = done.filter(_._2 == "dead").map(_._1.toInt).sorted
        assertEquals(dead, (1 to n).filter(_ % 7 == 0).toVector)
        assert(done.filter(_._2 == "dead").forall((_, _, attempt, errors) =>
          attempt == 3 && errors.contains("boom")
        ))
        assertEquals(ok.keySet, (1 to n).filterNot(_ % 7 == 0).toSet)
        val twice = ok.filter(_._2 > 1).keySet
        // the errors say why a claim was taken from its worker (a rescue's reason)
        assert(twice.isEmpty, s"tasks succeeded more than once: ${done.filter(d => twice(d._1.toInt))}")
        (1 to n).foreach { i =>
          val expected = if i % 7 == 0 then 3 else if i % 5 == 0 then 2 else 1
          assertEquals(ran(i), expected, s"runs of task $i")
        }
  }

  withDb("per-key order holds across three workers, and a failing head holds its key until its retry") { db =>
    val queue = TaskQueue[IO, (String, Int)](db, "keys")
    val keys = Vector("a", "b", "c", "d")
    val perKey = 40
    val tasks = (0 until perKey).flatMap(i => keys.map(k => NewTask((k, i), orderingKey = Some(k))))
    for
      _ <- queue.enqueueMany(tasks)
      seen <- Ref[IO].of(Map.empty[String, Vector[Int]])
      inFlight <- Ref[IO].of(Map.empty[String, Int])
      worst <- Ref[IO].of(0)
      handler = (job: Job[(String, Int)]) =>
        val (key, i) = job.payload
        inFlight.modify(m => (m.updated(key, m.getOrElse(key, 0) + 1), m.getOrElse(key, 0) + 1)).flatMap(
          now =>
            worst.update(_.max(now))
        ) *> IO.sleep((i % 3).millis) *> {
          if i % 10 == 3 && job.attempt == 1 then
            inFlight.update(m => m.updated(key, m(key) - 1)) *>
              IO.raiseError(new RuntimeException("head fails once"))
          else
            seen.update(m => m.updated(key, m.getOrElse(key, Vector.empty) :+ i)) *>
              inFlight.update(m => m.updated(key, m(key) - 1))
        }
      worker = DurableWorker.start[IO, (String, Int), Unit](db, config("keys")) { source =>
        Pipeline(source).process(handler).withLimit(Limit.fixed(4))
      }
      _ <- List.fill(3)(worker.use(_.running.join)).parSequence
      order <- seen.get
      most <- worst.get
      done <- Rows.count(db, "finished", "state = 'completed'")
    yield
      assertEquals(done, tasks.size.toLong)
      assertEquals(most, 1, "two tasks of one key ran at once")
      keys.foreach(k => assertEquals(order(k), (0 until perKey).toVector, s"order of key $k"))
  }

  withDb("a worker whose claims another worker rescued while it was alive counts them as taken") { db =>
    val queue = TaskQueue[IO, Int](db, "taken")
    for
      _ <- queue.enqueueMany((1 to 10).map(NewTask(_)))
      gate <- CountDownLatch[IO](1)
      // beats every 500 ms: a loaded machine's late beat would refuse a claim, whose hand-back, racing the
      // rescue below, leaves its task to be claimed again and never counted as taken
      taken <- DurableWorker
        .start[IO, Int, Unit](
          db,
          config("taken").copy(claimBatch = 10, stopWhenEmpty = false, heartbeat = 1.second)
        ) { source =>
          Pipeline(source).process(_ => gate.await).withLimit(Limit.fixed(2))
        }
        .use { worker =>
          // what a rescuer does to the claims of a worker it takes for dead
          val rescue = Rows.exec(
            s"UPDATE ${db.schema("tasks")} SET state = 'available', lease_owner = NULL, lease_expires_at = NULL, lease_token = NULL WHERE lease_owner = ${worker.id}"
          )
          Eventually.until("10 claims", worker.stats, 60.seconds, 20.millis)(_.claimed >= 10) *> rescue *>
            Eventually.until("every rescued claim counted as taken", worker.stats, 30.seconds, 20.millis)(
              _.taken >= 10
            ) <*
            gate.release <* worker.drain(10.seconds)
        }
    yield assertEquals(taken.taken, 10L)
  }

  withDb("drain hands back claimed tasks at once without counting their attempt") { db =>
    val queue = TaskQueue[IO, Int](db, "drain")
    for
      _ <- queue.enqueueMany((1 to 60).map(NewTask(_)))
      started <- CountDownLatch[IO](1)
      gate <- CountDownLatch[IO](1)
      summary <- DurableWorker
        .start[IO, Int, Unit](db, config("drain").copy(claimBatch = 30, stopWhenEmpty = false)) { source =>
          Pipeline(
            source
          ).process(_ => started.release *> gate.await).withLimit(Limit.fixed(1)).withBuffer(10)
        }
        .use { worker =>
          // the gate opens once the drain has stopped the buffer, which refuses the claimer's rows still
          // waiting for room (counted as not started at once): no second task can start after the first
          val stopped =
            Eventually.until("the drain to stop the buffer", worker.running.snapshot, 20.seconds, 20.millis)(
              _.notStarted > 0
            )
          started.await *> (worker.drain(10.seconds), stopped *> gate.release).parTupled.map(_._1)
        }
      rows <- Rows.tasks(db)
      completed <- Rows.count(db, "finished", "state = 'completed'")
    yield
      assertEquals(summary.succeeded, 1L)
      assert(summary.notStarted >= 1L, summary.toString)
      assertEquals(completed, 1L)
      assertEquals(rows.size, 59)
      assert(
        rows.forall((_, state, attempt, owner, _) => state == "available" && attempt == 0 && owner.isEmpty),
        rows.toString
      )
  }

  withDb("a payload that does not decode goes straight to dead with its error; the others run") { db =>
    val queue = TaskQueue[IO, Int](db, "decode")
    for
      _ <- queue.enqueueMany((1 to 10).map(NewTask(_)))
      _ <- Rows.enqueueSql(s"""${db.schema("enqueue")}('decode', '"not a number"'::jsonb)""")
      _ <- DurableWorker.start[IO, Int, Unit](
        db,
        config("decode")
      )(Pipeline(_).process(_ => IO.unit)).use(_.running.join)
      done <- Rows.finished(db)
    yield
      assertEquals(done.count(_._2 == "completed"), 10)
      val dead = done.filter(_._2 == "dead")
      assertEquals(dead.map(_._1), Vector("\"not a number\""))
      assert(dead.head._4.contains("payload does not decode"), dead.head._4)
  }

  withDb(
    "completing inside the handler's transaction: its writes and the completion commit together or not at all"
  ) { db =>
    import doobie.*
    import doobie.implicits.*
    val queue = TaskQueue[IO, Int](db, "tx")
    val table = db.schema("shipments_for_test")
    // payload % 3 == 0: the first attempt fails after completing, in the same transaction, so both roll back
    def handler(job: Job[Int]): IO[Unit] =
      (Fragment.const(s"INSERT INTO $table VALUES (${job.payload}, ${job.attempt})").update.run *>
        job.completeIn.flatMap(held =>
          FC.raiseError[Unit](new IllegalStateException("lost the claim")).unlessA(held)
        ) *>
        FC.raiseError[Unit](new RuntimeException("after completing")).whenA(job.payload % 3 == 0 &&
          job.attempt == 1))
        .transact(db.transactor)
    for
      _ <- Fragment.const(
        s"CREATE TABLE $table (payload int PRIMARY KEY, attempt int)"
      ).update.run.transact(db.transactor)
      _ <- queue.enqueueMany((1 to 30).map(NewTask(_)))
      _ <- DurableWorker.start[IO, Int, Unit](
        db,
        config("tx")
      )(Pipeline(_).process(handler).withLimit(Limit.fixed(4))).use(_.running.join)
      written <- Fragment.const(s"SELECT payload, attempt FROM $table ORDER BY payload").query[(
          Int,
          Int
      )].to[Vector].transact(TestDatabase.admin)
      done <- Rows.finished(db)
    yield
      assertEquals(written, (1 to 30).toVector.map(p => (p, if p % 3 == 0 then 2 else 1)))
      assertEquals(
        done.map(d => (d._1.toInt, d._2, d._3)).sortBy(_._1),
        (1 to 30).toVector.map(p => (p, "completed", if p % 3 == 0 then 2 else 1))
      )
  }

  withDb("by default completed tasks are deleted, not kept; dead ones are kept") { db =>
    val queue = TaskQueue[IO, Int](db, "gone")
    for
      _ <- queue.enqueueMany((1 to 50).map(i => NewTask(i, maxAttempts = 1)))
      stats <- TestWorkers.statsAfterRun(
        DurableWorker.start[IO, Int, Unit](db, config("gone").copy(keepCompleted = false)) { source =>
          Pipeline(source).process(job => IO.raiseError(new RuntimeException("no")).whenA(job.payload == 7))
        }
      )
      left <- Rows.count(db, "tasks")
      done <- Rows.finished(db)
    yield
      assertEquals(left, 0L)
      assertEquals(done.map(d => (d._1, d._2)), Vector(("7", "dead")))
      assertEquals((stats.completed, stats.dead), (49L, 1L))
  }

  withDb("a head waiting out its backoff holds only its own key; a dead head releases its key") { db =>
    val queue = TaskQueue[IO, String](db, "heads")
    // key a: its head fails once and waits 1 s (long enough for c's two tasks to run one after the other on
    // a loaded machine); key b: its head fails its only attempt and goes dead
    val tasks = Vector("a1", "a2", "b1", "b2", "c1", "c2").map(p =>
      NewTask(p, maxAttempts = if p == "b1" then 1 else 2, orderingKey = Some(p.take(1)))
    )
    for
      _ <- queue.enqueueMany(tasks)
      done <- Ref[IO].of(Vector.empty[String])
      handler = (job: Job[String]) =>
        if job.payload == "b1" || (job.payload == "a1" && job.attempt == 1) then
          IO.raiseError(new RuntimeException("no"))
        else done.update(_ :+ job.payload)
      slowRetry = config("heads").copy(backoff =
        Retry.exponential(
          base = 1.second,
          maxAttempts = Int.MaxValue,
          maxDelay = 1.second,
          jitter = Retry.Jitter.Off
        )
      )
      _ <-
        DurableWorker.start[IO, String, Unit](db, slowRetry)(Pipeline(_).process(handler)).use(_.running.join)
      order <- done.get
      finished <- Rows.finished(db)
    yield
      assertEquals(finished.filter(_._2 == "dead").map(_._1), Vector("\"b1\""))
      assertEquals(order.filter(_.startsWith("a")), Vector("a1", "a2"))
      assertEquals(order.filter(_.startsWith("b")), Vector("b2"))
      // c's tasks and b2 did not wait for a1's backoff
      assert(
        order.indexOf("c2") < order.indexOf("a1") && order.indexOf("b2") < order.indexOf("a1"),
        order.toString
      )
  }

  withDb(
    "a release whose results cannot be written hands back the tasks that ran counted, and only the unstarted ones uncounted"
  ) { db =>
    val queue = TaskQueue[IO, Int](db, "unwritten")
    val unwritable = config("unwritten").copy(stopWhenEmpty = false, releaseGrace = 300.millis)
    for
      _ <- queue.enqueueMany((1 to 8).map(NewTask(_)))
      // no completion can be written: the statement that completes a task deletes its row
      _ <- refuseDeletes(db)
      fourth <- CountDownLatch[IO](1)
      // limit 1: tasks 1 to 3 succeed, 4 is running at the release (interrupted), 5 to 8 never start
      _ <- DurableWorker
        .start[IO, Int, Unit](db, unwritable) { source =>
          Pipeline(source)
            .process(job => if job.payload == 4 then fourth.release *> IO.never else IO.unit)
            .withLimit(Limit.fixed(1))
        }
        .use(_ => fourth.await)
      rows <- Rows.tasks(db)
      done <- finishAll(db, "unwritten")
    yield
      assertEquals(rows.map(_._2), Vector.fill(8)("available"), rows.toString)
      assert(rows.forall(_._4.isEmpty), rows.toString)
      assertEquals(rows.map(_._3), Vector(1, 1, 1, 1, 0, 0, 0, 0), "attempts counted after the release")
      assertEquals(
        done.map(d => (d._1, d._2, d._3)),
        (1 to 8).toVector.map(i =>
          (i.toString, "completed", if i <= 4 then 2 else 1)
        )
      )
  }

  withDb(
    "a release while the database refuses every result, with more results than the completer queues, ends and loses nothing"
  ) { db =>
    val queue = TaskQueue[IO, Int](db, "full")
    // ackBatch 1: the completer queues four results; twenty tasks succeed, so the pipeline's outcome
    // consumer is left waiting to queue the rest while the writer retries
    val unwritable = config("full").copy(stopWhenEmpty = false, ackBatch = 1, releaseGrace = 300.millis)
    for
      _ <- queue.enqueueMany((1 to 20).map(NewTask(_)))
      _ <- refuseDeletes(db)
      // the guard only turns a hang into a failure; a release takes a few shutdown graces
      _ <- DurableWorker
        .start[IO, Int, Unit](db, unwritable)(Pipeline(_).process(_ => IO.unit).withLimit(Limit.fixed(4)))
        .use(w => Eventually.until("3 database errors", w.stats, within = 1.minute)(_.databaseErrors >= 3))
        .timeoutTo(1.minute, IO(fail("the release did not end")))
      rows <- Rows.tasks(db)
      done <- finishAll(db, "full")
    yield
      assertEquals(rows.size, 20)
      assert(rows.forall(r => r._2 == "available" && r._4.isEmpty), rows.toString)
      assertEquals(done.map(_._2), Vector.fill(20)("completed"))
  }
