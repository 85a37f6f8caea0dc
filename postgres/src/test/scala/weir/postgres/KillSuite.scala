package weir.postgres

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.postgres.KillableWorker.Liveness

import java.util.concurrent.TimeUnit
import scala.concurrent.duration.*

/** Worker JVMs killed with SIGKILL mid-run: nothing lost, duplicates only of what the killed one ran. */
class KillSuite extends DbSuite:

  override def munitIOTimeout: Duration = 4.minutes

  /** A worker JVM; the resource kills it (SIGKILL) if it is still running on release. */
  private def child(
      db: Database[IO],
      queue: String,
      limit: Int,
      liveness: Liveness
  ): Resource[IO, (Process, Long)] =
    children(db, Vector(queue), limit, liveness).map((p, ids) => (p, ids.head))

  private def children(db: Database[IO], queues: Vector[String], limit: Int, liveness: Liveness) =
    KillableWorker.launch(db, queues, limit, liveness)

  /** The replacement of the killed worker, started beside it and set to work once it is killed. */
  private def standby(db: Database[IO], queues: Vector[String], liveness: Liveness) =
    KillableWorker.standby(db, queues, 8, liveness)

  private def executions(db: Database[IO]): IO[Long] = Rows.count(db, "executions")

  /**
   * Two worker JVMs serve `n` tasks; once a quarter has run, one is SIGKILLed and a replacement set to work.
   * Every task must complete once, only what ran on the killed worker may run again, keys keep order, and
   * the killed worker's tasks must be rescued with `reason`.
   */
  private def killMidRun(db: Database[IO], liveness: Liveness, reason: String): IO[Unit] =
    val n = 1000
    val queue = TaskQueue[IO, Int](db, "kill")
    // every fourth task carries one of 10 ordering keys
    val tasks = (1 to n).map(i => NewTask(i, orderingKey = Option.when(i % 4 == 0)(s"k${i % 10}")))
    for
      _ <- Rows.exec(
        s"CREATE TABLE ${db.schema("executions")} (seq bigserial PRIMARY KEY, task_id bigint, attempt int, worker bigint, ordering_key text)"
      )
      ids <- queue.enqueueMany(tasks).map(_.map(_.taskId))
      killed <- (
        child(db, "kill", 8, liveness),
        child(db, "kill", 8, liveness),
        standby(db, Vector("kill"), liveness)
      ).parTupled.use {
        case ((victim, victimId), (survivor, _), (replacement, start)) =>
          // killed once a quarter has run, once it has run tasks of its own (a JVM slow to start could
          // otherwise be killed before it ran any, leaving nothing to test), and while it holds claims,
          // which only a rescue can then free
          val holding = TaskAdmin(db).overview.workers.map(_.exists(w => w.id == victimId && w.running > 0))
          val ranOnVictim = Rows.count(db, "executions", s"worker = $victimId")
          for
            _ <- KillableWorker.killOnce(
              victim,
              "a quarter of the tasks run, some on the victim, which holds a running one",
              (executions(db), ranOnVictim, holding).tupled,
              within = 2.minutes
            )((ran, own, held) => ran >= n / 4 && own > 0 && held)
            _ <- start
            _ <- IO.interruptible(replacement.waitFor(150, TimeUnit.SECONDS))
            _ <- IO.interruptible(survivor.waitFor(30, TimeUnit.SECONDS))
          yield victimId
      }
      done <- Rows.count(db, "finished", "state = 'completed'")
      left <- Rows.count(db, "tasks")
      completedAttempt <- Fragment
        .const(s"SELECT id, attempt FROM ${db.schema("finished")}")
        .query[(Long, Int)]
        .to[Vector]
        .transact(TestDatabase.admin)
        .map(_.toMap)
      rescued <- Rows.count(db, "finished", s"errors::text LIKE '%worker $killed $reason%'")
      otherReasons <- Rows.count(
        db,
        "finished",
        s"errors::text ~ 'worker [0-9]+ (stopped heartbeating|lost its database session)' AND errors::text NOT LIKE '%worker $killed $reason%'"
      )
      runs <- Fragment
        .const(s"SELECT task_id, worker, ordering_key, attempt FROM ${db.schema("executions")} ORDER BY seq")
        .query[(Long, Long, Option[String], Int)]
        .to[Vector]
        .transact(TestDatabase.admin)
    yield
      assertEquals(left, 0L)
      assertEquals(done, n.toLong)
      val byTask = runs.groupBy(_._1)
      assertEquals(byTask.keySet, ids.toSet, "every task ran")
      val twice = byTask.filter(_._2.size > 1)
      // a task ran again only if an earlier run was on the killed worker, and it was not the last one
      twice.foreach { (id, rs) =>
        assert(rs.init.forall(_._2 == killed), s"task $id ran more than once without the killed worker: $rs")
      }
      // what ran again had run on the killed worker without its completion committing (running, or finished
      // with the acknowledgement not yet written): the attempt that completed it is a later one
      twice.foreach { (id, rs) =>
        val killedAttempts = rs.filter(_._2 == killed).map(_._4)
        assert(
          killedAttempts.forall(_ < completedAttempt(id)),
          s"task $id: completed at ${completedAttempt(id)}, runs $rs"
        )
      }
      assert(
        runs.exists(_._2 == killed),
        "the killed worker ran nothing: the kill came too early to test anything"
      )
      assert(rescued > 0L, s"no task was rescued from the killed worker with '$reason'")
      assertEquals(otherReasons, 0L, "a task was rescued for another reason, or from another worker")
      // per key: runs in order, a re-run only right after the run it repeats
      runs.filter(_._3.isDefined).groupBy(_._3).foreach { (key, rs) =>
        val collapsed = rs.map(_._1).foldLeft(Vector.empty[Long])((acc, id) =>
          if acc.lastOption.contains(id) then acc else acc :+ id
        )
        assertEquals(collapsed, collapsed.sorted, s"order of key $key")
        assertEquals(collapsed.distinct, collapsed, s"key $key ran a task again after a later one")
      }

  withDb(
    "SIGKILL of a worker JVM that listens: its session ends and its tasks are rescued without waiting for deadAfter"
  ) {
    db =>
      // deadAfter far beyond the test's timeout: only the ended session can explain a rescue
      killMidRun(db, Liveness(listen = true, deadAfter = 1.hour), "lost its database session")
  }

  withDb(
    "SIGKILL of a worker JVM that does not listen: its tasks are rescued once its heartbeat is too old"
  ) {
    db =>
      killMidRun(db, Liveness(listen = false, deadAfter = 2.seconds), "stopped heartbeating")
  }
