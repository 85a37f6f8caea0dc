package weir.postgres

import cats.effect.{Deferred, IO}
import weir.Pipeline

import scala.concurrent.duration.*

/**
 * Wake-ups: with a poll interval of an hour, only a notification can start a task within the test's
 * deadline; with notifications off, the poll alone does.
 */
class NotifySuite extends DbSuite:

  private def idleWorker(db: Database[IO], config: WorkerConfig, ran: Deferred[IO, Long]) =
    DurableWorker.start[IO, Int, Unit](db, config)(Pipeline(_).process(job => ran.complete(job.id).void))

  private val hourPoll =
    WorkerConfig(queue = "n", pollInterval = 1.hour, heartbeat = 200.millis, deadAfter = 1.second)

  withDb("an enqueue wakes an idle worker through NOTIFY") { db =>
    for
      ran <- Deferred[IO, Long]
      id <- idleWorker(db, hourPoll, ran).use { _ =>
        IO.sleep(500.millis) *> TaskQueue[IO, Int](db, "n").enqueue(NewTask(1)) *> ran.get.timeout(20.seconds)
      }
    yield assert(id > 0)
  }

  withDb("a LISTEN connection that dies is opened again, and the next enqueue still wakes the worker") { db =>
    for
      ran <- Deferred[IO, Long]
      stats <- idleWorker(db, hourPoll, ran).use { w =>
        IO.sleep(500.millis) *>
          Rows.select(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND application_name = 'weir'"
          ) *>
          (IO.sleep(50.millis) *> w.stats).iterateUntil(_.databaseErrors > 0) *>
          IO.sleep(500.millis) *>
          TaskQueue[IO, Int](db, "n").enqueue(NewTask(1)) *> ran.get.timeout(20.seconds) *> w.stats
      }
    yield assert(stats.databaseErrors >= 1, stats.toString)
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
      _ <- idleWorker(db, polling, ran).use { _ =>
        IO.sleep(300.millis) *> TaskQueue[IO, Int](db, "n").enqueue(NewTask(1)) *> ran.get.timeout(20.seconds)
      }
    yield ()
  }
