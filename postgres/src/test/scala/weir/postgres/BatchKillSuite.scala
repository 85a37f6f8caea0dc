package weir.postgres

import cats.effect.{IO, Ref}
import cats.syntax.all.*
import doobie.implicits.*
import weir.Pipeline
import weir.postgres.KillableWorker.Liveness

import java.util.concurrent.TimeUnit
import scala.concurrent.duration.*

/**
 * A batch of a thousand members in two queues, served by worker JVMs, one of them SIGKILLed mid-run and
 * replaced: every member ends once and is counted once, the batch ends, and its callback is released once and
 * runs once, reading counts equal to its members' finished rows.
 */
class BatchKillSuite extends DbSuite:

  override def munitIOTimeout: Duration = 4.minutes

  withDb("SIGKILL of a worker JVM serving a batch: nothing lost, every member counted once, one callback") {
    db =>
      val batches = Batches(db)
      val queues = Vector("ka", "kb").map(q => TaskQueue[IO, Int](db, q))
      val liveness = Liveness(listen = true, deadAfter = 1.hour)
      val size = 1000
      for
        _ <- Rows.exec(
          s"""CREATE TABLE ${db.schema("executions")} (seq bigserial PRIMARY KEY, task_id bigint, attempt int,
          worker bigint, ordering_key text, at timestamptz NOT NULL DEFAULT clock_timestamp())"""
        )
        batch <- batches.open(TaskQueue[IO, Int](db, "done"), NewTask(-1))
        // a tenth may run only once: those the killed worker held end dead by the rescue
        members <- (0 until size).toVector.groupBy(_ % 2).toVector.flatTraverse((q, is) =>
          batches.add(batch, queues(q), is.map(i => NewTask(i, maxAttempts = if i % 10 == 0 then 1 else 20)))
        ).map(_.map(_.taskId))
        // some are cancelled before any worker starts
        cancels <- TaskAdmin(db).tasks.cancelMany(members.take(30), "not needed")
        closed <- batches.close(batch)
        // paused until both worker JVMs are up: the first one up would otherwise claim every member before a
        // slow-starting victim made its first claim (then it holds none, and the kill has nothing to test)
        controls = TaskAdmin(db).queues
        _ <- Vector("ka", "kb").traverse_(q => controls.add(q) *> controls.pause(q))
        killed <- (
          // one task at a time per worker: the run lasts seconds, not a fraction of one, so the check below
          // sees the victim holding claims while a quarter has run, however slowly its probes answer
          KillableWorker.launch(db, Vector("ka", "kb"), 1, liveness),
          KillableWorker.launch(db, Vector("ka", "kb"), 1, liveness),
          KillableWorker.standby(db, Vector("ka", "kb"), 1, liveness)
        ).parTupled.use { case ((victim, victimIds), (survivor, _), (replacement, start)) =>
          val holding =
            TaskAdmin(db).overview.workers.map(_.exists(w => victimIds.contains(w.id) && w.running > 0))
          val ran = Rows.count(db, "executions")
          val ranOnVictim = Rows.count(db, "executions", s"worker IN (${victimIds.mkString(", ")})")
          for
            _ <- Vector("ka", "kb").traverse_(controls.resume)
            _ <- KillableWorker.killOnce(
              victim,
              "a quarter of the members run, some on the victim, which holds a running one",
              (ran, ranOnVictim, holding).tupled,
              within = 2.minutes
            )((all, own, held) => all >= size / 4 && own > 0 && held)
            _ <- start
            _ <- IO.interruptible(replacement.waitFor(150, TimeUnit.SECONDS))
            _ <- IO.interruptible(survivor.waitFor(30, TimeUnit.SECONDS))
          yield victimIds
        }
        ended <- batches.progress(batch).map(_.getOrElse(fail(s"$batch not found")))
        finished <- Rows.query[(Long, String)](
          s"SELECT id, state::text FROM ${db.schema("finished")} WHERE id <> ${ended.callback}"
        )
        runs <-
          Rows.query[(Long, Long)](s"SELECT task_id, worker FROM ${db.schema("executions")} ORDER BY seq")
        callbackRow <- Rows.query[(String, Int)](
          s"SELECT state::text, parents_left FROM ${db.schema("tasks")} WHERE id = ${ended.callback}"
        )
        left <- Rows.count(db, "tasks", "batch IS NOT NULL")
        pending <- Rows.count(db, "batch_ends")
        rescuedDead <- Rows.query[Long](
          s"SELECT id FROM ${db.schema("finished")} WHERE state = 'dead' AND errors::text LIKE '%lost its database session%'"
        )
        rescued <- Rows.count(db, "finished", "errors::text LIKE '%lost its database session%'")
        // the callback, run once by a worker of this JVM, reads the batch it ended with
        read <- Ref[IO].of(Vector.empty[(Long, Option[BatchProgress])])
        _ <- TestWorkers.statsAfterRun(DurableWorker.start[IO, Int, Unit](db, TestWorkers.config("done")) {
          source =>
            Pipeline(source).process(job =>
              job.batch.transact(db.transactor).flatMap(b => read.update(_ :+ (job.id -> b)))
            )
        })
        callbackRuns <- read.get
      yield
        assertEquals(cancels.distinct, Vector(Cancel.Cancelled))
        assertEquals((closed.members, closed.cancelled, closed.ended), (size.toLong, 30L, false))
        assertEquals(left, 0L)
        assertEquals(pending, 0L, "every transaction applied its members' ends at its commit")
        assertEquals(finished.map(_._1).sorted, members.sorted, "every member ended once")
        val states = finished.map(_._2)
        assertEquals(
          (ended.members, ended.completed, ended.dead, ended.cancelled, ended.ended),
          (
            size.toLong,
            states.count(_ == "completed").toLong,
            states.count(_ == "dead").toLong,
            states.count(_ == "cancelled").toLong,
            true
          )
        )
        assertEquals(ended.cancelled, 30L)
        assertEquals(
          ended.dead,
          rescuedDead.size.toLong,
          "a member ends dead only by the rescue of a claim it had no attempt left for"
        )
        assertEquals(callbackRow, Vector(("available", 0)), "the callback was released once, and only it")
        assertEquals(callbackRuns, Vector(ended.callback -> Some(ended)))
        assert(
          runs.exists(r => killed.contains(r._2)),
          "the killed worker ran nothing: the kill came too early"
        )
        assert(rescued > 0L, "no member was rescued from the killed worker")
        val ran = runs.map(_._1).toSet
        assert(ran.subsetOf(members.drop(30).toSet), "a cancelled member ran")
        assertEquals(
          members.drop(30).filterNot(ran),
          members.drop(30).filter(rescuedDead.toSet).filterNot(ran),
          "every member not cancelled ran, but those the killed worker had claimed and the rescue ended dead"
        )
  }
