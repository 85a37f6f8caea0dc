package weir.postgres

import cats.effect.IO
import cats.syntax.all.*
import doobie.postgres.implicits.*
import weir.postgres.KillableWorker.Liveness

import java.time.Instant
import java.util.concurrent.TimeUnit
import scala.concurrent.duration.*

/**
 * A graph of tasks served by worker JVMs, one of them SIGKILLed mid-run and replaced: nothing is lost, no
 * dependent starts before its parents completed (by the server's clock, against their finished rows), and
 * every dependent runs, those whose parents the killed worker held included; every task's finished row,
 * whoever ended it (the rescue of the killed worker's tasks included), keeps its workflow and parents.
 */
class GraphKillSuite extends DbSuite:

  override def munitIOTimeout: Duration = 4.minutes

  /**
   * A root; 400 tasks waiting for it; 40 chains of 15, each starting after one of those; a sink waiting for
   * every chain's end and a tenth of the 400. Every fourth task has one of ten ordering keys. Each task's
   * parents, by its number (the payload), in the order `add` names them.
   */
  private val parents: Vector[Vector[Int]] =
    val middles = (1 to 400).map(_ => Vector(0))
    val chains = (0 until 40).flatMap(c =>
      (0 until 15).map(k => if k == 0 then Vector(1 + c * 10) else Vector(401 + c * 15 + k - 1))
    )
    val ends = (0 until 40).map(c => 401 + c * 15 + 14)
    Vector(Vector.empty[Int]) ++ middles ++ chains :+ (ends ++ (1 to 400 by 10)).toVector

  withDb("SIGKILL of a worker JVM serving a graph: nothing lost, no dependent started early, every one ran") {
    db =>
      val queue = TaskQueue[IO, Int](db, "graph")
      val liveness = Liveness(listen = true, deadAfter = 1.hour)
      val graph = parents.indices.foldLeft(TaskGraph.empty)((g, i) =>
        g.add(
          s"t$i",
          queue,
          NewTask(i, orderingKey = Option.when(i % 4 == 0)(s"k${i % 10}")),
          parents(i).map(p => After.completed(s"t$p"))
        )
      )
      val n = parents.size
      for
        _ <- Rows.exec(
          s"""CREATE TABLE ${db.schema("executions")} (seq bigserial PRIMARY KEY, task_id bigint, attempt int,
            worker bigint, ordering_key text, at timestamptz NOT NULL DEFAULT clock_timestamp())"""
        )
        handles <- graph.enqueue(db)
        ids = parents.indices.toVector.map(i => handles(s"t$i").taskId)
        killed <- (
          // one task at a time per worker: the victim's claims then outlast the check below, so the kill finds
          // some it holds (at limit 8 it could finish them between the check and the kill, and nothing was
          // rescued)
          KillableWorker.launch(db, Vector("graph"), 1, liveness),
          KillableWorker.launch(db, Vector("graph"), 1, liveness),
          KillableWorker.standby(db, Vector("graph"), 1, liveness)
        )
          .parTupled
          .use { case ((victim, victimIds), (survivor, _), (replacement, start)) =>
            val victimId = victimIds.head
            val holding =
              TaskAdmin(db).overview.workers.map(_.exists(w => w.id == victimId && w.running > 0))
            val ran = Rows.count(db, "executions")
            val ranOnVictim = Rows.count(db, "executions", s"worker = $victimId")
            for
              _ <- KillableWorker.killOnce(
                victim,
                "a quarter of the tasks run, some on the victim, which holds a running one",
                (ran, ranOnVictim, holding).tupled,
                within = 2.minutes
              )((all, own, held) => all >= n / 4 && own > 0 && held)
              _ <- start
              _ <- IO.interruptible(replacement.waitFor(150, TimeUnit.SECONDS))
              _ <- IO.interruptible(survivor.waitFor(30, TimeUnit.SECONDS))
            yield victimId
          }
        ended <- Rows.query[(Long, String, Instant)](
          s"SELECT id, state::text, finished_at FROM ${db.schema("finished")}"
        )
        kept <- Rows.query[(Long, Option[Long], Option[String])](
          s"SELECT id, workflow, after::text FROM ${db.schema("finished")}"
        )
        runs <- Rows.query[(Long, Long, Instant)](
          s"SELECT task_id, worker, at FROM ${db.schema("executions")} ORDER BY seq"
        )
        left <- Rows.count(db, "tasks")
        edges <- Rows.count(db, "dependencies")
        rescued <-
          Rows.count(db, "finished", s"errors::text LIKE '%worker $killed lost its database session%'")
      yield
        assertEquals((left, edges), (0L, 0L))
        assertEquals(ended.map(_._1).sorted, ids.sorted, "every task ended once")
        assertEquals(ended.map(_._2).distinct, Vector("completed"))
        assertEquals(
          kept.map(k => (k._1, k._2, k._3)).toSet,
          ids.indices.map(i =>
            (
              ids(i),
              Some(ids.min),
              Option.when(parents(i).nonEmpty)(parents(i).map(ids).mkString("{", ",", "}"))
            )
          ).toSet,
          "each finished row keeps the workflow, named by the root, and its parents in the order added"
        )
        val finishedAt = ended.map(e => e._1 -> e._3).toMap
        val byTask = runs.groupBy(_._1)
        assertEquals(byTask.keySet, ids.toSet, "every task ran")
        ids.indices.foreach { i =>
          byTask(ids(i)).foreach { (_, _, at) =>
            parents(i).foreach(p =>
              assert(!at.isBefore(finishedAt(ids(p))), s"task $i started at $at, before parent $p completed")
            )
          }
        }
        // a task ran again only if an earlier run was on the killed worker
        byTask.foreach((id, rs) =>
          assert(rs.init.forall(_._2 == killed), s"task $id ran again without the kill: $rs")
        )
        assert(
          runs.exists(_._2 == killed),
          "the killed worker ran nothing: the kill came too early to test anything"
        )
        assert(rescued > 0L, "no task was rescued from the killed worker")
  }
