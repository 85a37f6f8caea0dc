package weir.postgres

import cats.effect.{Deferred, IO, Ref, Resource}
import cats.effect.std.Queue
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.Pipeline
import weir.postgres.internal.ControlSql
import weir.testkit.Eventually

import scala.concurrent.duration.*

/**
 * Wake-ups: with a poll interval of an hour, only a notification can start a task within the test's
 * deadline; with notifications off, the poll alone does.
 */
class NotifySuite extends DbSuite:

  private def idleWorker(db: Database[IO], config: WorkerConfig, ran: Deferred[IO, Long]) =
    DurableWorker.start[IO, Int, Unit](db, config)(Pipeline(_).process(job => ran.complete(job.id).void))

  // a heartbeat long enough that a worker's first claim never finds its registration's beat too old: a
  // claim skipped for a late beat would take the session's first wake-up, and [[quiet]] would wait for a
  // second claim that never comes
  private val hourPoll =
    WorkerConfig(queue = "n", pollInterval = 1.hour, heartbeat = 5.seconds, deadAfter = 20.seconds)

  /** Pauses or resumes queue `n` without waking anyone, as [[TaskAdmin]]'s pause and resume would. */
  private def setPaused(db: Database[IO], paused: Boolean): IO[Unit] =
    new ControlSql(db.schema).set(
      "n",
      ControlSql.Change(paused = Some(paused))
    ).update.run.transact(db.transactor).void

  /**
   * A listening `worker`, in use once it has nothing left to claim for: started on queue `n` paused, so that
   * every claim it makes counts as held back, it is handed over once its two startup claims were held back
   * (its first one, and the one its session's opening asks for, for what was enqueued while no one
   * listened), and the queue is resumed without a notification. Until a notification or its poll, such a
   * worker claims nothing: a task enqueued after this cannot be found by a claim that was due anyway.
   */
  private def quiet(db: Database[IO], worker: Resource[IO, DurableWorker[IO, Int]])
      : Resource[IO, DurableWorker[IO, Int]] =
    Resource.eval(setPaused(db, paused = true)) *> worker.evalTap(w =>
      heldBack(w, 2) *> setPaused(db, paused = false)
    )

  /** Waits until `w` has had `n` claims held back by its queue's controls. */
  private def heldBack(w: DurableWorker[IO, Int], n: Long): IO[Unit] =
    Eventually.until(s"$n claims held back", w.stats, 20.seconds, 20.millis)(_.heldBack >= n).void

  withDb("an enqueue wakes an idle worker through NOTIFY") { db =>
    for
      ran <- Deferred[IO, Long]
      ids <- quiet(db, idleWorker(db, hourPoll, ran)).use { _ =>
        TaskQueue[IO, Int](db, "n").enqueue(NewTask(1)).product(
          ran.get.timeoutTo(20.seconds, IO(fail("the enqueue did not wake the worker")))
        )
      }
    yield assertEquals(ids._2, ids._1.taskId)
  }

  withDb(
    "a worker's session gets every notification of a burst, one transaction's or many, over TLS when the server offers it"
  ) { db =>
    val channel = db.schema.channel
    def notify(n: Int, from: Int) = (from until from + n).toVector.traverse_(i =>
      sql"SELECT pg_notify($channel, ${i.toString})".query[Unit].unique
    )
    val session =
      Resource.make(IO.blocking(Database.open(TestDatabase.config(db.schema))))(c => IO.blocking(c.close()))
    session.use { c =>
      val pg = c.unwrap(classOf[org.postgresql.PGConnection])
      def scalar(q: String) =
        IO.blocking {
          val st = c.createStatement()
          try
            val rs = st.executeQuery(q)
            rs.next()
            rs.getString(1)
          finally st.close()
        }
      def received(want: Int, got: Set[String]): IO[Set[String]] =
        if got.size >= want then IO.pure(got)
        else
          IO.blocking(pg.getNotifications(250).toVector.map(_.getParameter))
            .flatMap(ns => received(want, got ++ ns))
      for
        _ <- IO.blocking {
          val st = c.createStatement()
          try st.execute("LISTEN \"" + channel + "\"")
          finally st.close()
        }
        serverTls <- scalar("SHOW ssl")
        sessionTls <-
          scalar("SELECT coalesce((SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()), false)")
        // one transaction of 100, then 20 of one each, with a wait in between that the session spends reading
        _ <- notify(100, 0).transact(db.transactor)
        _ <- (0 until 20).toVector.traverse_(i => notify(1, 100 + i).transact(db.transactor))
        got <- received(
          120,
          Set.empty
        ).timeoutTo(20.seconds, IO.raiseError(new AssertionError("notifications lost")))
      yield
        assertEquals(got, (0 until 120).map(_.toString).toSet)
        assertEquals(sessionTls == "t", serverTls == "on", s"server ssl $serverTls, session ssl $sessionTls")
    }
  }

  withDb(
    "every way of adding a task wakes an idle worker: batches, unique batches, the SQL function, an outbox, a retry"
  ) {
    db =>
      val q = TaskQueue[IO, Int](db, "n")
      val deadId = Fragment
        .const(s"SELECT id FROM ${db.schema("finished")} WHERE state = 'dead'")
        .query[Long]
        .option
        .transact(TestDatabase.admin)
      for
        started <- Queue.unbounded[IO, Int]
        failed <- Ref[IO].of(false)
        worker = quiet(
          db,
          DurableWorker.start[IO, Int, Unit](db, hourPoll)(Pipeline(_).process { job =>
            // task 5 fails its first run, its only attempt: it goes dead until retried by hand
            started.offer(job.payload) *>
              failed.getAndSet(true).flatMap(before =>
                IO.raiseError(new RuntimeException("once")).unlessA(before)
              )
                .whenA(job.payload == 5)
          })
        )
        _ <- worker.use { _ =>
          def woken(payload: Int) =
            started.take.timeoutTo(20.seconds, IO(fail(s"task $payload did not wake the worker"))).map(p =>
              assertEquals(p, payload)
            )
          for
            _ <- q.enqueueMany(Vector(NewTask(1))) *> woken(1)
            _ <- q.enqueueMany(Vector(NewTask(2, uniqueKey = Some("u")))) *> woken(2)
            _ <- Rows.enqueueSql(s"${db.schema("enqueue")}('n', '3')") *> woken(3)
            _ <- q.enqueueIn(NewTask(4)).transact(db.transactor) *> woken(4)
            _ <- q.enqueue(NewTask(5, maxAttempts = 1)) *> woken(5)
            id <- Eventually.defined("task 5 to go dead", deadId, within = 20.seconds)
            retried <- TaskAdmin(db).tasks.retry(id)
            _ <- woken(5)
          yield assertEquals(retried, Retry.Retried)
        }
      yield ()
  }

  withDb(
    "a worker's session that dies is opened again: its lock is taken again, and the next enqueue still wakes the worker"
  ) { db =>
    val locks =
      s"FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND classid = ${db.schema.sessionLockClass}"
    val since = Fragment
      .const(s"SELECT session_since FROM ${db.schema("workers")}")
      .query[Option[java.time.OffsetDateTime]]
      .unique
      .transact(TestDatabase.admin)
    for
      ran <- Deferred[IO, Long]
      result <- quiet(db, idleWorker(db, hourPoll, ran)).use { w =>
        for
          first <- Eventually.until("the worker's session", since, within = 60.seconds)(_.isDefined)
          _ <- setPaused(db, paused = true)
          _ <- Rows.select(s"SELECT pg_terminate_backend(pid) $locks")
          // every failed session and the new one wake the claimer once: the new session is open and each of
          // those wake-ups has had its claim (held back) once there are as many claims as errors, plus one
          second <- Eventually
            .until("the session opened again", (since, w.stats).tupled, within = 20.seconds)((at, stats) =>
              at != first && stats.databaseErrors > 0 && stats.heldBack - 2 >= stats.databaseErrors + 1
            )
            .map(_._1)
          held <- Rows.select(s"SELECT true $locks")
          _ <- setPaused(db, paused = false)
          _ <- TaskQueue[IO, Int](db, "n").enqueue(NewTask(1)) *>
            ran.get.timeoutTo(20.seconds, IO(fail("the enqueue did not wake the worker")))
          stats <- w.stats
        yield (first, second, held, stats)
      }
    yield
      val (first, second, held, stats) = result
      assert(stats.databaseErrors >= 1, stats.toString)
      assert(second.exists(s => first.exists(s.isAfter)), s"$first then $second")
      assertEquals(held, 1)
  }

  withDb("the tasks a draining worker hands back, unstarted or interrupted, wake another idle worker") { db =>
    val q = TaskQueue[IO, Int](db, "n")
    for
      firstStarted <- Deferred[IO, Unit]
      ranElsewhere <- Ref[IO].of(Set.empty[Int])
      // one task runs (and hangs) on the first worker, which holds the other four claimed and unstarted
      holder = DurableWorker.start[IO, Int, Unit](db, hourPoll) { source =>
        Pipeline(source).process(_ => firstStarted.complete(()) *> IO.never).withLimit(weir.Limit.fixed(1))
      }
      other = DurableWorker.start[IO, Int, Unit](db, hourPoll)(Pipeline(_).process(job =>
        ranElsewhere.update(_ + job.payload)
      ))
      _ <- q.enqueueMany((1 to 5).map(NewTask(_)))
      _ <- holder.use { h =>
        firstStarted.get *> quiet(db, other).use { _ =>
          // the other worker's claims found nothing and none is due; only a wake-up can start the handed-back
          // tasks within the deadline, its poll being an hour
          h.drain(100.millis) *>
            (IO.sleep(50.millis) *> ranElsewhere.get).iterateUntil(_.size == 5).timeoutTo(
              20.seconds,
              (ranElsewhere.get, Rows.tasks(db), Rows.finished(db)).tupled.flatMap(seen =>
                IO(fail(s"handed back, not woken: (ran elsewhere, tasks, finished) = $seen"))
              )
            )
        }
      }
      ran <- ranElsewhere.get
    yield assertEquals(ran, (1 to 5).toSet)
  }

  withDb(
    "the session's claims on notifications race the claimer's own 1 ms polls: every task runs once, none is left held"
  ) { db =>
    val q = TaskQueue[IO, Int](db, "n")
    val n = 300
    val racing = hourPoll.copy(pollInterval = 1.milli)
    for
      runs <- Ref[IO].of(Map.empty[Int, Int])
      _ <- DurableWorker
        .start[IO, Int, Unit](db, racing)(Pipeline(_).process(job =>
          runs.update(m => m.updated(job.payload, m.getOrElse(job.payload, 0) + 1))
        ))
        .use { _ =>
          (1 to n).toList.traverse_(i => q.enqueue(NewTask(i)) *> IO.sleep((i % 3).millis)) *>
            Eventually.until(s"all $n tasks run", runs.get.map(_.size))(_ == n)
        }
      ran <- runs.get
      left <- Rows.tasks(db)
    yield
      assertEquals(ran.keySet, (1 to n).toSet)
      assertEquals(ran.filter(_._2 != 1), Map.empty[Int, Int])
      assertEquals(left, Vector.empty)
  }

  withDb("with notifications off, the poll finds new tasks") { db =>
    val polling = WorkerConfig(
      queue = "n",
      listen = false,
      pollInterval = 100.millis,
      heartbeat = 200.millis,
      deadAfter = 1.second
    )
    for
      ran <- Deferred[IO, Long]
      ids <- Resource.eval(setPaused(db, paused = true)).flatMap(_ => idleWorker(db, polling, ran)).use { w =>
        // nothing wakes a worker that does not listen: its claims after the first one are its polls
        heldBack(w, 3) *> setPaused(db, paused = false) *>
          TaskQueue[IO, Int](db, "n").enqueue(NewTask(1)).product(
            ran.get.timeoutTo(20.seconds, IO(fail("the poll did not find the task")))
          )
      }
    yield assertEquals(ids._2, ids._1.taskId)
  }
