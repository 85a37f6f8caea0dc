package weir.lab.durable

import cats.effect.{IO, Ref, Resource}
import cats.effect.std.Supervisor
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import doobie.postgres.implicits.*
import weir.Pipeline
import weir.postgres.*

import java.util.concurrent.ThreadLocalRandom
import scala.concurrent.duration.*

/** The measurements of `./weir lab durable`, each on its own queue of the run's schema. */
object Phases:

  private def seconds(from: Long, to: Long): Double = (to - from) / 1e9

  /** Batch enqueue rates, tasks per second: from one enqueuer, and from `enqueuers` at once (if more than one). */
  final case class Enqueue(one: Double, concurrent: Option[(Int, Double)])

  /**
   * Enqueues `n` tasks (every 4th with one of `keys` ordering keys) in batches of 10,000, first from one
   * enqueuer, then from `enqueuers` at once, each its share of `n` on its own connection. A first round of
   * `n / 10` tasks (at most 20,000), not measured, compiles this JVM's enqueue path, as in a service that
   * has been enqueuing for a while.
   */
  def enqueue(db: Database[IO], queue: String, n: Int, keys: Int, enqueuers: Int): IO[Enqueue] =
    val q = TaskQueue[IO, Int](db, queue)
    def batches(from: Int, to: Int): IO[Unit] = (from until to).grouped(10000).toList.traverse_(g =>
      q.enqueueMany(g.map(i => NewTask(i, orderingKey = key(i, keys))))
    ).void
    def rate(count: Int)(io: IO[Unit]): IO[Double] = io.timed.map((t, _) => count / t.toUnit(SECONDS))
    for
      _ <- TaskQueue[IO, Int](db, s"$queue-warmup").enqueueMany((1 to (n / 10).min(20000)).map(NewTask(_)))
      one <- rate(n)(batches(0, n))
      concurrent <-
        if enqueuers <= 1 then IO.none
        else
          val share = n / enqueuers
          rate(share * enqueuers)(
            (0 until enqueuers).toList.parTraverse_(e => batches(n + e * share, n + (e + 1) * share))
          ).map(r => Some((enqueuers, r)))
    yield Enqueue(one, concurrent)

  /** Task `i`'s ordering key: every 4th task gets one, the `keys` keys in turn (so each is used alike). */
  def key(i: Int, keys: Int): Option[String] = Option.when(keys > 0 && i % 4 == 0)(s"k${(i / 4) % keys}")

  /** One throughput round: weir's no-op tasks per second, then River's jobs per second (or why not). */
  final case class Round(worked: Double, river: Either[String, Double])

  /**
   * `rounds` rounds of no-op tasks worked per second by `workers` idle worker processes once `n` tasks
   * appear at once (one enqueue transaction): from its commit until the queue is empty. After each round,
   * `between` runs (River's benchmark on the same server, so that both see the machine in the same state;
   * weir's workers wait idle meanwhile). A first round of `n / 5` tasks, not measured, lets the workers'
   * JIT compile the claim path (River's benchmark is a compiled Go binary).
   */
  def throughput(
      lab: LabDatabase,
      db: Database[IO],
      queue: String,
      n: Int,
      workers: Int,
      limit: Int,
      rounds: Int,
      between: IO[Either[String, Double]]
  ): IO[Vector[Round]] =
    val args = List(lab.url, lab.schema.name, queue, limit.toString, "noop", "1000", "3000")
    val empty =
      (Fragment.const(s"SELECT NOT EXISTS (SELECT 1 FROM ${lab.schema("tasks")} WHERE queue = ") ++
        fr0"$queue)").query[Boolean].unique.transact(lab.admin)
    def round(tasks: Int): IO[Double] =
      for
        _ <- TaskQueue[IO, Int](db, queue).enqueueMany((1 to tasks).map(NewTask(_)))
        t0 <- IO.monotonic
        _ <- (IO.sleep(50.millis) *> empty).iterateUntil(identity)
        t1 <- IO.monotonic
      yield tasks / seconds(t0.toNanos, t1.toNanos)
    List.fill(workers)(Children.start(args)).parSequence.use { children =>
      round((n / 5).max(1)) *>
        (1 to rounds).toVector.traverse(r =>
          round(n).flatMap(w => between.map(Round(w, _))).flatTap(x =>
            IO.println(
              f"  round $r: weir ${x.worked}%.0f tasks/s, River ${x.river.fold(identity, d => f"$d%.0f jobs/s")}"
            )
          )
        ) <*
        children.traverse_(c => IO.blocking(c.process.destroy())) <* // SIGTERM: each drains and deregisters
        children.traverse_(c => IO.interruptible(c.process.waitFor()).void)
    }

  /** The median of `xs` (the mean of the middle two when their number is even); NaN when empty. */
  def median(xs: Vector[Double]): Double =
    if xs.isEmpty then Double.NaN
    else
      val sorted = xs.sorted
      val mid = sorted.size / 2
      if sorted.size % 2 == 1 then sorted(mid) else (sorted(mid - 1) + sorted(mid)) / 2

  /** One idle-latency sample: from the enqueue call, and from its commit (the call's return), to the start. */
  final case class Latency(fromCall: Double, fromCommit: Double)

  /**
   * Enqueue-to-start latencies (ms) of `n` tasks enqueued one at a time, 20 ms apart, to an idle worker in
   * this JVM, after `warmup` unmeasured ones 1 ms apart (so that the claim path runs compiled code, as it
   * does in a long-running worker).
   */
  def idleLatency(db: Database[IO], queue: String, n: Int, warmup: Int, listen: Boolean, poll: FiniteDuration)
      : IO[Vector[Latency]] =
    val config = WorkerConfig(queue = queue, listen = listen, pollInterval = poll)
    for
      started <- Ref[IO].of(Map.empty[Int, Long])
      worker = DurableWorker.start[IO, Int, Unit](db, config) { source =>
        Pipeline(source).process(job =>
          IO.monotonic.flatMap(t => started.update(_.updated(job.payload, t.toNanos)))
        )
      }
      latencies <- worker.use { w =>
        (1 to warmup + n).toVector.traverse { i =>
          for
            t0 <- IO.monotonic
            _ <- TaskQueue[IO, Int](db, queue).enqueue(NewTask(i))
            committed <- IO.monotonic
            t1 <- (IO.sleep(200.micros) *> started.get.map(_.get(i))).iterateUntil(_.isDefined).map(_.get)
            _ <- IO.sleep(if i > warmup then 20.millis else 1.milli)
          yield Latency((t1 - t0.toNanos) / 1e6, (t1 - committed.toNanos) / 1e6)
        }.map(_.drop(warmup)) <* w.drain(5.seconds)
      }
    yield latencies

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
  def killRun(
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
        TaskQueue[IO, Int](db, queue).enqueueMany((1 to n).map(i => NewTask(i, orderingKey = key(i, keys))))
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

  /** River's own benchmark against a scratch database on the same server: jobs per second, or why not. */
  def river(lab: LabDatabase, script: String, n: Int): IO[Either[String, Double]] =
    val database = s"weir_lab_river_${ProcessHandle.current().pid()}"
    val (jdbc, props) = DatabaseConfig.toJdbc(lab.url)
    val hostPort = jdbc.stripPrefix("jdbc:postgresql://").takeWhile(_ != '/')
    val user = Option(props.getProperty("user")).getOrElse("postgres")
    val password = Option(props.getProperty("password")).fold("")(":" + _)
    val url = s"postgres://$user$password@$hostPort/$database"
    if !java.nio.file.Files.isRegularFile(java.nio.file.Paths.get(script)) then
      IO.pure(Left(s"no River script at $script"))
    else
      Resource.make(lab.autocommit(s"CREATE DATABASE $database"))(_ =>
        lab.autocommit(s"DROP DATABASE IF EXISTS $database")
      ).use { _ =>
        IO.blocking {
          val p = new ProcessBuilder("bash", script, url, n.toString).redirectErrorStream(true).start()
          val out = new String(p.getInputStream.readAllBytes())
          (p.waitFor(), out)
        }.map { (code, out) =>
          val rate =
            """overall job/sec \[\s*([0-9.]+)\s*\]""".r.findFirstMatchIn(out).map(_.group(1).toDouble)
          rate.toRight(
            s"River's benchmark exited $code: ${out.linesIterator.toList.takeRight(3).mkString(" / ")}"
          )
        }
      }
