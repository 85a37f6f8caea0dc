package weir.lab.durable

import cats.effect.{IO, Ref, Resource}
import cats.effect.std.Supervisor
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.postgres.*

import java.util.concurrent.ThreadLocalRandom
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
   * `unexplained` names each task whose repeat no kill explains; `rescueOfKill`, per kill, its first rescue;
   * `lockFreed`, per kill, when the server freed the worker's session lock (see [[KillWatch]]).
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
   * one started. Counts lost tasks, duplicate executions and whether each had an earlier run on a killed
   * worker, per-key order violations, the time from each kill to its worker's tasks being rescued and to
   * the first re-run of one of them, and enqueue-to-start latency under backlog.
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
      deadAfter: FiniteDuration
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
    val clock =
      Fragment.const("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8").query[Double].unique
    // whether any task is left: a count would scan the backlog every time, on the cores the workers need
    val anyLeft =
      (Fragment.const(s"SELECT EXISTS (SELECT 1 FROM ${s("tasks")} WHERE queue = ") ++ fr0"$queue)")
        .query[Boolean].unique.transact(lab.admin)
    for
      _ <- Fragment
        .const(s"""CREATE TABLE IF NOT EXISTS ${s(
            "executions"
          )} (seq bigserial PRIMARY KEY, task_id bigint, attempt int,
                    worker bigint, ordering_key text, started_at timestamptz DEFAULT clock_timestamp())""")
        .update.run.transact(lab.admin)
      enqueued <-
        TaskQueue[IO, Int](db, queue).enqueueMany((1 to n).map(i =>
          NewTask(i, orderingKey = Phases.key(i, keys))
        ))
      kills <- Ref[IO].of(Vector.empty[Kill])
      freed <- Ref[IO].of(Map.empty[Long, Double])
      live <- Ref[IO].of(Vector.empty[(Children.Child, IO[Unit])])
      spawn = Children.start(args).allocated.flatMap(c => live.update(_ :+ c))
      // the first workers start together: one started after another would find its elder already
      // working through the backlog on both cores, and take seconds to come up
      _ <- List.fill(workers)(spawn).parSequence_
      // each kill's watch (see `KillWatch`) outlives the kill; the run waits for the watches before it is analysed
      killer = (watchers: Supervisor[IO]) =>
        killEvery.fold(IO.unit) { every =>
          def loop: IO[Unit] =
            IO(ThreadLocalRandom.current().nextLong(every.toMillis / 2, every.toMillis * 3 / 2 + 1)).flatMap(
              ms =>
                IO.sleep(ms.millis)
            ) *> anyLeft.flatMap { left =>
              if !left then IO.unit
              else
                live.get.flatMap { cs =>
                  val alive = cs.filter(_._1.process.isAlive)
                  if alive.isEmpty then loop
                  else
                    val (victim, release) = alive(ThreadLocalRandom.current().nextInt(alive.size))
                    // the kill's time is read before the signal, so a rescue is never timed short; a kill and
                    // its replacement are not interrupted, so that every started child is in `live`
                    // what the other workers see of the victim: whether its session holds its lock (then its
                    // death is seen within a heartbeat), and how many others are alive to rescue its tasks
                    IO.uncancelable(_ =>
                      TaskAdmin(db).workers.flatMap { ws =>
                        val held = ws.exists(w => w.id == victim.workerId && w.sessionHeld)
                        val others = ws.count(w => w.id != victim.workerId && w.sessionHeld)
                        clock.transact(lab.admin).flatMap(at =>
                          IO.blocking(victim.process.destroyForcibly().waitFor()) *>
                            kills.update(_ :+ Kill(victim.workerId, at, held, others)) *>
                            watchers.supervise(
                              KillWatch.follow(lab, victim.workerId, at, deadAfter * 3).flatMap(
                                _.traverse_(ms => freed.update(_ + (victim.workerId -> ms)))
                              )
                            ) *>
                            IO.realTimeInstant.flatMap(now =>
                              IO.consoleForIO.errorln(s"  [lab] $now SIGKILL of worker ${victim.workerId}")
                            )
                        )
                      } *> release *> live.update(_.filterNot(_._1 eq victim)) *> spawn
                    ) *> loop
                }
            }
          loop
        }
      _ <- (Supervisor[IO](await = true), Resource.make(IO.unit)(_ => live.get.flatMap(_.traverse_(_._2))))
        .tupled.use { (watchers, _) =>
          // the killer is stopped as soon as the queue is empty, rather than after its next nap
          killer(watchers).background.surround((IO.sleep(200.millis) *> anyLeft).iterateUntil(!_)) *>
            live.get.flatMap(_.traverse_(c => IO.interruptible(c._1.process.waitFor()).void))
        }
      killed <- kills.get
      lockFreed <- freed.get
      result <- analyse(lab, queue, enqueued.map(_.taskId), killed, lockFreed).transact(lab.admin)
    yield result

  /**
   * The repeats no kill explains, one line for each task that has one: a repeat is explained only by the
   * kill of the worker that ran the task before, ahead of the repeat's start. A repeat of a task whose
   * worker was alive (a false rescue, say) is not. The first run's own time is not compared with the
   * kill: every run of a killed worker began before it died, though its record, sent just before the
   * signal, may reach the server after the kill's time was read. `runs` are (task, worker, key, start ms) in
   * the order they were recorded.
   */
  def unexplained(runs: Vector[(Long, Long, Option[String], Double)], kills: Vector[Kill]): Vector[String] =
    val killOf = kills.map(k => k.workerId -> k).toMap
    runs.groupBy(_._1).filter(_._2.size > 1).toVector.sortBy(_._1).flatMap { (task, rs) =>
      rs.sliding(2).collect {
        case Vector(before, after) if !killOf.get(before._2).exists(_.atMillis <= after._4) =>
          s"task $task: run on worker ${before._2} at ${before._4}, again on worker ${after._2} at ${after._4}" +
            killOf.get(before._2).fold(" (worker never killed)")(k => s" (worker killed at ${k.atMillis})")
      }.take(1)
    }

  private def analyse(
      lab: LabDatabase,
      queue: String,
      ids: Vector[Long],
      kills: Vector[Kill],
      lockFreed: Map[Long, Double]
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
      // a rescue of a worker before its kill, or of one never killed: a live worker taken for dead
      val falseRescues =
        rescuedAt.count((w, ats) => killOf.get(w).forall(k => ats.exists(_ < k.atMillis))).toLong
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
        unexplained = unexplained(runs, kills),
        keyViolations = violations.toLong,
        kills = kills,
        rescueOfKill = rescueOfKill,
        lockFreed = kills.map(k => lockFreed.get(k.workerId)),
        falseRescues = falseRescues,
        rerunMillis = reruns,
        backlogP50Ms = backlog._1,
        backlogP99Ms = backlog._2
      )
