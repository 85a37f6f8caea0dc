package weir.lab.durable

import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.postgres.*

import scala.concurrent.duration.*

/**
 * The kill run of `./weir lab durable`: worker JVMs that record every execution, SIGKILLed at random while
 * the backlog lasts, and what the database says afterwards of every task, key and kill.
 */
object KillPhase:

  /**
   * A SIGKILL: the database's clock just before the signal, and what the other workers saw of the victim
   * then: whether its session held its lock, and how many other workers' sessions did.
   */
  final case class Kill(workerId: Long, atMillis: Double, sessionHeld: Boolean, othersAlive: Int)

  /**
   * A restart of the server (`--restart-every`): when its stop began and when it answered again, on this
   * machine's clock, which is the server's too (the lab restarts only the embedded server it started here).
   */
  final case class Restart(downMillis: Double, upMillis: Double):
    def outageMillis: Double = upMillis - downMillis

  /**
   * `unexplained` names each task whose repeat no kill or restart explains; `repeatsAfterRestart` counts
   * the repeats only a restart explains; `rescueOfKill`, per kill, its first rescue; `lockFreed`, per kill,
   * when the server freed the worker's session lock (see [[KillWatch]]); `restartRescues`, the rescues of
   * live workers whose sessions a restart ended (not counted in `falseRescues`).
   */
  final case class KillRun(
      tasks: Int,
      workSeconds: Double,
      lost: Long,
      executions: Long,
      duplicates: Long,
      unexplained: Vector[String],
      keyViolations: Long,
      kills: Vector[Kill],
      rescueOfKill: Vector[Option[(Double, Boolean)]],
      lockFreed: Vector[Option[Double]],
      falseRescues: Long,
      restarts: Vector[Restart],
      repeatsAfterRestart: Long,
      restartRescues: Long,
      rerunMillis: Vector[Double],
      backlogP50Ms: Double,
      backlogP99Ms: Double
  ):
    def tasksPerSecond: Double = tasks / workSeconds

    def unexplainedDuplicates: Long = unexplained.size.toLong

    /** From each kill to its worker's first rescue, for the kills whose worker held tasks. */
    def rescueMillis: Vector[Double] = rescueOfKill.flatten.map(_._1)

    /** How many of those rescues found the worker dead by its ended session rather than by `deadAfter`. */
    def rescuedBySession: Int = rescueOfKill.flatten.count(_._2)

  /**
   * `n` tasks (every 4th keyed) worked by `workers` processes that record each execution; with `killEvery`,
   * a random worker is SIGKILLed at random moments around every `killEvery` (while tasks remain) and a new
   * one started; with `restartEvery`, the server is restarted every `restartEvery` (while tasks remain; only
   * a server the lab started, `lab.restart`). Counts lost tasks, duplicate executions and whether each had
   * an earlier run on a killed worker or across a restart, per-key order violations, the time from each
   * kill to its worker's tasks being rescued and to the first re-run of one of them, and enqueue-to-start
   * latency under backlog. The lab's own reads ride out a restart ([[Retrying]]).
   */
  def run(
      lab: LabDatabase,
      db: Database[IO],
      queue: String,
      n: Int,
      workers: Int,
      limit: Int,
      keys: Int,
      killEvery: Option[FiniteDuration],
      heartbeat: FiniteDuration,
      deadAfter: FiniteDuration,
      restartEvery: Option[FiniteDuration] = None
  ): IO[KillRun] =
    val s = lab.schema
    val args = List(
      lab.url,
      s.name,
      queue,
      limit.toString,
      "record",
      heartbeat.toMillis.toString,
      deadAfter.toMillis.toString
    )
    // whether any task is left: a count would scan the backlog every time, on the cores the workers need
    val anyLeft = lab.read("whether tasks remain")(
      (Fragment.const(s"SELECT EXISTS (SELECT 1 FROM ${s("tasks")} WHERE queue = ") ++ fr0"$queue)")
        .query[Boolean].unique
    )
    val restarting = restartEvery.traverse(every =>
      lab.restart.map((every, _)).liftTo[IO](new IllegalArgumentException(
        "--restart-every: the lab cannot restart a server it did not start (--url or $WEIR_DATABASE_URL)"
      ))
    )
    for
      restartWith <- restarting
      _ <- lab.read("the executions table")(Fragment
        .const(s"""CREATE TABLE IF NOT EXISTS ${s(
            "executions"
          )} (seq bigserial PRIMARY KEY, task_id bigint, attempt int, worker bigint, ordering_key text,
                    started_at timestamptz DEFAULT clock_timestamp())""")
        .update.run)
      enqueued <-
        enqueueOnce(lab, db, queue, (1 to n).map(i => NewTask(i, orderingKey = Phases.key(i, keys))))
      chaos <- Chaos.run(
        lab,
        db,
        args,
        workers,
        killEvery,
        restartWith,
        deadAfter,
        active = anyLeft,
        end = Chaos.End.OnTheirOwn
      )((IO.sleep(200.millis) *> anyLeft).iterateUntil(!_).void)
      record = chaos._2
      result <- lab.read("the kill run's records")(
        analyse(lab, queue, enqueued, record.kills, record.restarts, record.lockFreed, deadAfter)
      )
    yield result

  /**
   * Enqueues `tasks` in one transaction, into `queue`, which is empty and not worked yet, riding out a
   * restart: after a failure that may have hidden the commit, the queue is read, and holds either all the
   * tasks (the commit went through: their ids are returned) or none (the enqueue is tried again).
   */
  private def enqueueOnce(lab: LabDatabase, db: Database[IO], queue: String, tasks: Seq[NewTask[Int]])
      : IO[Vector[Long]] =
    val committed = lab.read("the enqueued tasks")(
      (Fragment.const(s"SELECT id FROM ${lab.schema("tasks")} WHERE queue = ") ++ fr0"$queue ORDER BY id")
        .query[Long].to[Vector]
    )
    Retrying("the enqueue")(
      TaskQueue[IO, Int](db, queue).enqueueMany(tasks).map(_.map(_.taskId)).handleErrorWith { e =>
        if !Retrying.transient(e) then IO.raiseError(e)
        else committed.flatMap(ids => if ids.size == tasks.size then IO.pure(ids) else IO.raiseError(e))
      }
    )

  /**
   * The repeats no kill or restart explains, one line for each task that has one. A repeat is explained by
   * the kill of the worker that ran the task before, ahead of the repeat's start; a repeat of a task whose
   * worker was alive (a false rescue, say) is not. The first run's own time is not compared with the
   * kill: every run of a killed worker began before it died, though its record, sent just before the
   * signal, may reach the server after the kill's time was read. A repeat is also explained by a restart
   * that ended after the earlier run began and began before the repeat did (see [[byRestart]]). `runs`
   * are (task, worker, key, start ms) in the order they were recorded.
   */
  def unexplained(
      runs: Vector[(Long, Long, Option[String], Double)],
      kills: Vector[Kill],
      restarts: Vector[Restart] = Vector.empty
  ): Vector[String] =
    val killOf = kills.map(k => k.workerId -> k).toMap
    repeats(runs).flatMap { (task, pairs) =>
      pairs.collect {
        case (before, after) if !byKill(killOf, before, after) && !byRestart(restarts, before, after) =>
          s"task $task: run on worker ${before._2} at ${before._4}, again on worker ${after._2} at ${after._4}" +
            killOf.get(before._2).fold(" (worker never killed)")(k => s" (worker killed at ${k.atMillis})")
      }.take(1)
    }

  /** How many repeats a restart explains and no kill does. */
  def repeatsAfterRestart(
      runs: Vector[(Long, Long, Option[String], Double)],
      kills: Vector[Kill],
      restarts: Vector[Restart]
  ): Long =
    val killOf = kills.map(k => k.workerId -> k).toMap
    repeats(runs).map(_._2.count((b, a) => !byKill(killOf, b, a) && byRestart(restarts, b, a))).sum.toLong

  private type Execution = (Long, Long, Option[String], Double)

  /** Each repeated task with its consecutive pairs of runs, by task. */
  private def repeats(runs: Vector[Execution]): Vector[(Long, Vector[(Execution, Execution)])] =
    runs.groupBy(_._1).filter(_._2.size > 1).toVector.sortBy(_._1).map((task, rs) =>
      (task, rs.sliding(2).collect { case Vector(before, after) => (before, after) }.toVector)
    )

  private def byKill(killOf: Map[Long, Kill], before: Execution, after: Execution): Boolean =
    killOf.get(before._2).exists(_.atMillis <= after._4)

  /**
   * Whether a restart lies between two runs of a task: it ended after the earlier run began and began
   * before the repeat. A restart ends every session and stops every heartbeat: until the earlier run's
   * worker has heartbeated again, another worker's rescuer may take it for dead (an outage longer than
   * `deadAfter`, or a heartbeat that resumes late on a starved machine) and its tasks run again. A run
   * that began after the server was back is not explained by it; nor is one whose result committed before
   * the stop, but the records do not say when a result committed, so such a repeat passes too.
   */
  def byRestart(restarts: Vector[Restart], before: Execution, after: Execution): Boolean =
    restarts.exists(r => before._4 <= r.upMillis && r.downMillis <= after._4)

  private def analyse(
      lab: LabDatabase,
      queue: String,
      ids: Vector[Long],
      kills: Vector[Kill],
      restarts: Vector[Restart],
      lockFreed: Map[Long, Double],
      deadAfter: FiniteDuration
  ): ConnectionIO[KillRun] =
    val s = lab.schema
    val killOf = kills.map(k => k.workerId -> k).toMap
    for
      // lost: an enqueued task that did not end completed or dead (counted by id, so that neither another
      // queue's rows nor a duplicate row can make up for a missing one)
      lost <-
      (Fragment.const(s"SELECT count(*) FROM unnest(") ++ fr0"${ids.toArray}::bigint[]" ++
        Fragment.const(s""") AS i(id) WHERE NOT EXISTS (SELECT 1 FROM ${s("finished")} AS f
                   WHERE f.id = i.id AND f.queue = """) ++ fr0"$queue" ++
        Fragment.const(" AND f.state IN ('completed', 'dead'))")).query[Long].unique
      runs <- Fragment
        .const(
          s"SELECT task_id, worker, ordering_key, (extract(epoch FROM started_at) * 1000)::float8 FROM ${s("executions")} ORDER BY seq"
        )
        .query[(Long, Long, Option[String], Double)]
        .to[Vector]
      span <- Fragment
        .const(s"SELECT extract(epoch FROM (SELECT max(finished_at) FROM ${s("finished")} WHERE queue = ")
        .++(fr0"$queue" ++ Fragment.const(s") - (SELECT min(started_at) FROM ${s("executions")}))::float8"))
        .query[Double].unique
      backlog <- Fragment
        .const(s"""SELECT coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), 0), coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY ms), 0)
                   FROM (SELECT extract(epoch FROM min(e.started_at) - f.created_at) * 1000 AS ms
                         FROM ${s("executions")} e JOIN ${s(
            "finished"
          )} f ON f.id = e.task_id GROUP BY f.id, f.created_at) AS x""")
        .query[(Double, Double)].unique
      // every rescue of a worker's tasks: the rescuer writes the reason, naming the worker, with the
      // database's clock, into each task's errors
      rescueEvents <- Fragment
        .const(s"""SELECT DISTINCT substring(e->>'error' FROM '^worker ([0-9]+) ')::bigint,
                          (extract(epoch FROM (e->>'at')::timestamptz) * 1000)::float8,
                          e->>'error' LIKE '%lost its database session'
                   FROM ${s("finished")} f, jsonb_array_elements(f.errors) AS e
                   WHERE e->>'error' ~ '^worker [0-9]+ (stopped heartbeating|lost its database session)$$'""")
        .query[(Long, Double, Boolean)]
        .to[Vector]
    yield
      val byTask = runs.groupBy(_._1)
      val twice = byTask.filter(_._2.size > 1)
      val rescuedAt = rescueEvents.groupMap(_._1)(_._2)
      // how each killed worker's first rescue found it dead: its ended session, or `deadAfter` of silence
      val rescueOfKill = kills.map(k =>
        rescueEvents.filter(e => e._1 == k.workerId && e._2 >= k.atMillis).minByOption(_._2).map(e =>
          (e._2 - k.atMillis, e._3)
        )
      )
      // a restart ends every worker's session: until a live worker has reconnected and taken its lock
      // again, the others find it dead by its ended session, or by its silence during the outage. Within
      // `deadAfter` of the server's return every live worker has heartbeated again (heartbeat < deadAfter)
      val afterRestart = (at: Double) =>
        restarts.exists(r => r.downMillis <= at && at <= r.upMillis + deadAfter.toMillis)
      // a rescue of a worker before its kill, or of one never killed, that no restart explains: a live
      // worker taken for dead
      val falseRescues = rescuedAt.count((w, ats) =>
        ats.exists(at => !afterRestart(at) && killOf.get(w).forall(at < _.atMillis))
      ).toLong
      val restartRescues = rescuedAt.count((w, ats) =>
        ats.exists(at => afterRestart(at) && killOf.get(w).forall(at < _.atMillis))
      ).toLong
      val violations = runs.filter(_._3.isDefined).groupBy(_._3).values.count { rs =>
        val collapsed = rs.map(_._1).foldLeft(Vector.empty[Long])((acc, id) =>
          if acc.lastOption.contains(id) then acc else acc :+ id
        )
        collapsed != collapsed.sorted || collapsed.distinct != collapsed
      }
      // a kill's re-run: the first later execution, on another worker, of a task the killed worker had run
      // (none when it was killed between tasks)
      val reruns = kills.flatMap { k =>
        val held = runs.collect { case (task, w, _, _) if w == k.workerId => task }.toSet
        runs.collect { case (task, w, _, at) if w != k.workerId && held(task) && at >= k.atMillis => at }
          .minOption.map(_ - k.atMillis)
      }
      KillRun(
        tasks = ids.size,
        workSeconds = span,
        lost = lost,
        executions = runs.size.toLong,
        duplicates = twice.size.toLong,
        unexplained = unexplained(runs, kills, restarts),
        keyViolations = violations.toLong,
        kills = kills,
        rescueOfKill = rescueOfKill,
        lockFreed = kills.map(k => lockFreed.get(k.workerId)),
        falseRescues = falseRescues,
        restarts = restarts,
        repeatsAfterRestart = repeatsAfterRestart(runs, kills, restarts),
        restartRescues = restartRescues,
        rerunMillis = reruns,
        backlogP50Ms = backlog._1,
        backlogP99Ms = backlog._2
      )
