package weir.postgres

import cats.effect.IO
import cats.syntax.all.*
import weir.postgres.KillableWorker.Liveness

import java.util.concurrent.TimeUnit
import scala.concurrent.duration.*

/**
 * A worker JVM whose workers of two queues share one session, SIGKILLed mid-run: both workers' tasks are
 * rescued through the one ended session. Apart from [[KillSuite]], so that the build's test JVMs can share
 * the suites that start worker JVMs.
 */
class SharedSessionKillSuite extends DbSuite:

  override def munitIOTimeout: Duration = 4.minutes

  withDb(
    "SIGKILL of a JVM whose workers of two queues share one session: both workers' tasks are rescued without waiting for deadAfter"
  ) { db =>
    val queues = Vector("k1", "k2")
    // deadAfter far beyond the test's timeout: only the ended session can explain a rescue
    val liveness = Liveness(listen = true, deadAfter = 1.hour)
    for
      _ <- Rows.exec(
        s"CREATE TABLE ${db.schema("executions")} (seq bigserial PRIMARY KEY, task_id bigint, attempt int, worker bigint, ordering_key text)"
      )
      _ <- queues.traverse_(q => TaskQueue[IO, Int](db, q).enqueueMany((1 to 500).map(NewTask(_))))
      victims <- (
        KillableWorker.launch(db, queues, 8, liveness),
        KillableWorker.standby(db, queues, 8, liveness)
      ).parTupled.use {
        case ((victim, ids), (replacement, start)) =>
          // killed while each of its workers holds claims (which only a rescue can then free) and has run tasks
          val holding =
            TaskAdmin(db).overview.workers.map(ws =>
              ids.forall(id => ws.exists(w => w.id == id && w.running > 0))
            )
          val ran = ids.traverse(id => Rows.count(db, "executions", s"worker = $id")).map(_.forall(_ > 0))
          for
            _ <- KillableWorker.killOnce(
              victim,
              "a task run and one running on each victim worker",
              (ran, holding).tupled,
              60.seconds
            )(_ && _)
            _ <- start
            _ <- IO.interruptible(replacement.waitFor(150, TimeUnit.SECONDS))
          yield ids
      }
      left <- Rows.count(db, "tasks")
      rescued <- victims.traverse(id =>
        Rows.count(db, "finished", s"errors::text LIKE '%worker $id lost its database session%'")
      )
    yield
      assertEquals(left, 0L)
      assert(rescued.forall(_ > 0L), s"rescued per killed worker $victims: $rescued")
  }
