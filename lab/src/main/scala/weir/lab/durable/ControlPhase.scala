package weir.lab.durable

import cats.effect.{IO, Ref, Resource}
import cats.syntax.all.*
import weir.{Limit, Pipeline}
import weir.postgres.*

import scala.concurrent.duration.*

/**
 * `./weir lab durable --only control`: the queue controls, with `workers` workers in this JVM (each with
 * its own pools and session, as separate processes would have), on queues of the run's schema.
 *
 *   - Pause: the workers drain a backlog of 1 ms tasks; the queue is paused; the time from the call to the
 *     last claim any worker made (their claim counters, sampled every millisecond), then a quiet spell of
 *     two poll intervals in which no claim may come.
 *   - Limit on running tasks: a backlog of 5 ms tasks under a queue limit below what the workers' own
 *     limits allow together; the most running tasks ever seen in the database, sampled without pause.
 *   - Rate: a backlog of no-op tasks under a queue rate; the claims counted over `rateWindow`, after the
 *     first burst has been spent.
 *   - Schedules: four schedulers declare one schedule ticking every 100 ms, for at least 100 ticks, while
 *     a worker completes its tasks (kept in `finished`); the tasks per tick, across both tables.
 *   - Revoked claims: a worker holding 40 claims, one of them running, has its heartbeat held up (its row
 *     locked) past `deadAfter`; another worker rescues and runs them all; then the first could go on:
 *     the claims it starts after that are revoked ones started (none may be), the others it refuses.
 *   - Cancels: a worker runs handlers that never end; each in turn is cancelled ([[TaskActions.cancel]]), and
 *     the time from the call to the handler's finalizer is measured (one JVM, one monotonic clock).
 */
object ControlPhase:

  final case class Control(
      pauseToLastClaimMillis: Double,
      pauseCallMillis: Double,
      claimsAfterQuiet: Long,
      globalLimit: Int,
      maxRunningSeen: Long,
      limitSamples: Long,
      rateAsked: Double,
      rateSeen: Double,
      rateWindow: FiniteDuration,
      scheduleTicks: Long,
      scheduleDuplicates: Long,
      scheduleGaps: Long,
      revokedStarted: Long,
      revokedRefused: Long,
      cancels: Int,
      cancelToInterruptMillis: Vector[Double],
      cancelledSeen: Long
  ):
    /** The cancel → interrupt time at quantile `q` (0 to 1). */
    def cancelQuantile(q: Double): Double = DurableReport.pct(cancelToInterruptMillis, q)

    /** The achieved rate's distance from the asked one, as a fraction of it. */
    def rateError: Double = (rateSeen - rateAsked).abs / rateAsked

  def run(
      db: Database[IO],
      workers: Int,
      pauseBacklog: Int,
      limitTasks: Int,
      rateWindow: FiniteDuration,
      cancels: Int
  ): IO[Control] =
    for
      pause <- pausePhase(db, workers, pauseBacklog)
      _ <- IO.println(
        f"  control: pause → last claim ${pause._1}%.1f ms (the call itself ${pause._2}%.1f ms), claims after the quiet spell ${pause._3}"
      )
      limit <- limitPhase(db, workers, globalLimit = 8, limitTasks)
      _ <- IO.println(s"  control: limit 8, most running seen ${limit._1} (${limit._2} samples)")
      rate <- ratePhase(db, workers, perSecond = 200, burst = 20, rateWindow)
      _ <- IO.println(f"  control: rate asked 200/s, seen $rate%.1f/s over ${rateWindow.toSeconds} s")
      ticks <- schedulePhase(db, schedulers = 4, atLeast = 100)
      _ <- IO.println(
        s"  control: ${ticks._1} ticks from 4 schedulers, ${ticks._2} duplicate(s), ${ticks._3} gap(s)"
      )
      revoked <- revokedPhase(db, claims = 40)
      _ <- IO.println(s"  control: revoked claims started ${revoked._1}, refused ${revoked._2}")
      cancelled <- cancelPhase(db, cancels)
      _ <- IO.println(
        f"  control: cancel → handler interrupted, ${cancelled._1.size} cancels: p50 ${DurableReport.pct(cancelled._1, 0.5)}%.1f ms, p99 ${DurableReport.pct(cancelled._1, 0.99)}%.1f ms; ${cancelled._2} cancelled in finished"
      )
    yield Control(
      pause._1,
      pause._2,
      pause._3,
      8,
      limit._1,
      limit._2,
      200,
      rate,
      rateWindow,
      ticks._1,
      ticks._2,
      ticks._3,
      revoked._1,
      revoked._2,
      cancels,
      cancelled._1,
      cancelled._2
    )

  private def config(queue: String, claimBatch: Int): WorkerConfig =
    WorkerConfig(queue = queue, claimBatch = claimBatch, pollInterval = 1.second, keepCompleted = false)

  private def workersOf(db: Database[IO], n: Int, config: WorkerConfig, limit: Int)(
      handler: Job[Int] => IO[Unit]
  ): Resource[IO, List[DurableWorker[IO, Int]]] =
    List.fill(n)(
      DurableWorker.start[IO, Int, Unit](
        db,
        config
      )(Pipeline(_).process(handler).withLimit(Limit.fixed(limit)))
    ).sequence

  private def claimed(ws: List[DurableWorker[IO, Int]]): IO[Long] =
    ws.traverse(_.stats).map(_.map(_.claimed).sum)

  private def waitUntil(p: IO[Boolean]): IO[Unit] =
    p.flatMap(ok => if ok then IO.unit else IO.sleep(10.millis) *> waitUntil(p))

  /** `(pause call → last claim ms, the call's own ms, claims after a quiet spell of two poll intervals)`. */
  private def pausePhase(db: Database[IO], workers: Int, backlog: Int): IO[(Double, Double, Long)] =
    val queue = "control-pause"
    val admin = TaskAdmin(db)
    for
      _ <- admin.queues.add(queue)
      _ <- TaskQueue[IO, Int](db, queue).enqueueMany((1 to backlog).map(NewTask(_)))
      result <- workersOf(db, workers, config(queue, claimBatch = 20), limit = 16)(_ =>
        IO.sleep(1.milli)
      ).use {
        ws =>
          for
            // a steady state of claims first
            _ <- waitUntil(claimed(ws).map(_ >= 2000L))
            last <- Ref[IO].of((0L, 0L)) // (claims, when that count was first seen)
            sampler =
              (claimed(ws).flatMap(c =>
                IO.monotonic.flatMap(now =>
                  last.update((n, at) => if c != n then (c, now.toNanos) else (n, at))
                )
              ) *> IO.sleep(1.milli)).foreverM
            out <- sampler.background.use { _ =>
              for
                t0 <- IO.monotonic
                _ <- admin.queues.pause(queue)
                t1 <- IO.monotonic
                _ <-
                  IO.sleep(2.seconds) // two poll intervals: a worker that missed the notification has polled
                atQuiet <- claimed(ws)
                seen <- last.get
                _ <- IO.sleep(2.seconds)
                after <- claimed(ws)
              yield ((seen._2 - t0.toNanos).max(0L) / 1e6, (t1 - t0).toNanos / 1e6, after - atQuiet)
            }
            _ <- admin.queues.resume(queue)
          yield out
      }
    yield result

  /** `(most running tasks seen in the database, samples)`, under a queue limit of `globalLimit`. */
  private def limitPhase(db: Database[IO], workers: Int, globalLimit: Int, n: Int): IO[(Long, Long)] =
    val queue = "control-limit"
    val admin = TaskAdmin(db)
    import doobie.implicits.*
    val running =
      (doobie.Fragment.const(s"SELECT count(*) FROM ${db.schema("tasks")} WHERE queue = ") ++
        fr0"$queue AND state = 'running'").query[Long].unique.transact(db.transactor)
    for
      _ <- admin.queues.add(queue)
      _ <- admin.queues.limitRunning(queue, Some(globalLimit))
      _ <- TaskQueue[IO, Int](db, queue).enqueueMany((1 to n).map(NewTask(_)))
      seen <- Ref[IO].of((0L, 0L))
      sampler = running.flatMap(r => seen.update((m, k) => (m.max(r), k + 1))).foreverM
      _ <- sampler.background.use(_ =>
        workersOf(db, workers, config(queue, claimBatch = 2).copy(stopWhenEmpty = true), limit = 16)(_ =>
          IO.sleep(5.millis)
        ).use(_.parTraverse_(_.running.join))
      )
      result <- seen.get
    yield result

  /** Tasks claimed per second over `window` under a queue rate of `perSecond`, after the first burst. */
  private def ratePhase(db: Database[IO], workers: Int, perSecond: Double, burst: Int, window: FiniteDuration)
      : IO[Double] =
    val queue = "control-rate"
    val admin = TaskAdmin(db)
    val n = (perSecond * (window.toSeconds + 10)).toInt
    for
      _ <- admin.queues.add(queue)
      _ <- admin.queues.limitRate(queue, Some(QueueRate(perSecond, burst)))
      _ <- TaskQueue[IO, Int](db, queue).enqueueMany((1 to n).map(NewTask(_)))
      rate <- workersOf(db, workers, config(queue, claimBatch = 50), limit = 16)(_ => IO.unit).use { ws =>
        for
          _ <- waitUntil(claimed(ws).map(_ >= burst.toLong))
          _ <- IO.sleep(1.second)
          c0 <- claimed(ws)
          t0 <- IO.monotonic
          _ <- IO.sleep(window)
          c1 <- claimed(ws)
          t1 <- IO.monotonic
        yield (c1 - c0) / (t1 - t0).toUnit(SECONDS)
      }
    yield rate

  /**
   * `(ticks, duplicates, gaps)`: `schedulers` schedulers of one schedule every 100 ms, until they have
   * enqueued `atLeast` ticks; a tick's task counted in `tasks` and `finished` alike (a worker completes
   * them, keeping them), so that a tick enqueued again after its first task finished shows too.
   */
  private def schedulePhase(db: Database[IO], schedulers: Int, atLeast: Int): IO[(Long, Long, Long)] =
    import doobie.implicits.*
    val name = "lab-every-100ms"
    val queue = "control-ticks"
    // catching up, so that a tick due while the machine was busy is late, not missing
    val schedule =
      Schedule.every(name, 100.millis, queue = queue, payload = 0, missed = Schedule.Missed.catchUp(10))
    val byTick =
      doobie.Fragment.const(s"""SELECT split_part(unique_key, ':', 3)::bigint, count(*) FROM (
          SELECT unique_key FROM ${db.schema("tasks")} WHERE unique_key LIKE 'schedule:$name:%'
          UNION ALL
          SELECT unique_key FROM ${db.schema("finished")} WHERE unique_key LIKE 'schedule:$name:%'
        ) AS k GROUP BY 1 ORDER BY 1""").query[(Long, Long)].to[Vector].transact(db.transactor)
    val worker =
      DurableWorker.start[IO, Int, Unit](db, config(queue, claimBatch = 10).copy(keepCompleted = true))(
        Pipeline(_).process(_ => IO.unit)
      )
    worker.use { _ =>
      List.fill(schedulers)(Scheduler.resource(db, Vector(schedule), checkEvery = 50.millis)).sequence.use {
        ss =>
          waitUntil(ss.traverse(_.stats).map(_.map(_.ticks).sum >= atLeast.toLong))
      }
    } *> byTick.map { rows =>
      val ticks = rows.size.toLong
      val duplicates = rows.map(_._2 - 1).sum
      val gaps = if rows.isEmpty then 0L else (rows.last._1 - rows.head._1) / 100 + 1 - ticks
      (ticks, duplicates, gaps)
    }

  /**
   * `(revoked claims started, claims refused)`: a worker holding `claims` claims (limit 1: one running,
   * the others waiting in its buffer) whose heartbeat is held up past `deadAfter`; another worker rescues
   * and completes them all; then the first one's handler returns, and it would go on with the others.
   */
  private def revokedPhase(db: Database[IO], claims: Int): IO[(Long, Long)] =
    import doobie.implicits.*
    val queue = "control-revoked"
    val settings = config(queue, claimBatch = claims).copy(heartbeat = 200.millis, deadAfter = 1.second)
    val left =
      (doobie.Fragment.const(s"SELECT count(*) FROM ${db.schema("tasks")} WHERE queue = ") ++ fr0"$queue")
        .query[Long].unique.transact(db.transactor)
    // a connection of the pool of `db.transactor`, held in a transaction until release
    def holdRow(owner: Long): Resource[IO, Unit] =
      db.transactor.connect(db.transactor.kernel).flatMap(c =>
        Resource.make(IO.blocking {
          c.setAutoCommit(false)
          val st = c.createStatement()
          try st.executeQuery(s"SELECT 1 FROM ${db.schema("workers")} WHERE id = $owner FOR UPDATE").close()
          finally st.close()
        })(_ => IO.blocking { c.rollback(); c.setAutoCommit(true) })
      )
    for
      _ <- TaskQueue[IO, Int](db, queue).enqueueMany((1 to claims).map(NewTask(_)))
      started <- Ref[IO].of(0L)
      gate <- IO.deferred[Unit]
      first <- IO.deferred[Unit]
      slow = DurableWorker.start[IO, Int, Unit](db, settings)(
        Pipeline(
          _
        ).process(_ => started.update(_ + 1) *> first.complete(()) *> gate.get).withLimit(Limit.fixed(1))
      )
      rescuer = DurableWorker.start[IO, Int, Unit](db, settings)(Pipeline(_).process(_ => IO.unit))
      refused <- slow.use { a =>
        for
          _ <- first.get
          _ <- waitUntil(a.stats.map(_.claimed >= claims.toLong))
          refused <- holdRow(a.id).use(_ =>
            rescuer.use(_ =>
              waitUntil(left.map(_ == 0L)) *> gate.complete(()) *>
                waitUntil(a.stats.map(_.refused >= (claims - 1).toLong)) *> a.stats.map(_.refused)
            )
          )
        yield refused
      }
      n <- started.get
    yield (n - 1, refused)

  /**
   * `(cancel call → finalizer ms per cancel, tasks cancelled in finished)`: `n` tasks whose handlers never
   * end, on one worker running 16 at once; each in turn, once running, is cancelled and its finalizer
   * awaited. The worker listens, as by default: the cancel reaches it by notification.
   */
  private def cancelPhase(db: Database[IO], n: Int): IO[(Vector[Double], Long)] =
    import doobie.implicits.*
    val queue = "control-cancel"
    val cancelled =
      (doobie.Fragment.const(
        s"SELECT count(*) FROM ${db.schema("finished")} WHERE state = 'cancelled' AND queue = "
      ) ++
        fr0"$queue").query[Long].unique.transact(db.transactor)
    for
      ids <- TaskQueue[IO, Int](db, queue).enqueueMany((1 to n).map(NewTask(_))).map(_.map(_.taskId))
      signals <- ids.traverse(id => (IO.deferred[Unit], IO.deferred[Long]).tupled.map(id -> _)).map(_.toMap)
      admin = TaskAdmin(db)
      times <-
        DurableWorker.start[IO, Int, Unit](db, config(queue, claimBatch = 16).copy(keepCompleted = true))(
          Pipeline(_).process { job =>
            val (started, interrupted) = signals(job.id)
            (started.complete(()) *> IO.never[Unit])
              .onCancel(IO.monotonic.flatMap(t => interrupted.complete(t.toNanos)).void)
          }.withLimit(Limit.fixed(16))
        ).use { worker =>
          // bounded waits: a task that never starts, or is cancelled and never interrupted, ends the phase with
          // an error naming it; cancels never written are counted short in `finished`, not waited for forever
          def within[A](wait: IO[A], what: String): IO[A] =
            wait.timeoutTo(60.seconds, IO.raiseError(new IllegalStateException(s"$what within 60 s")))
          ids.traverse { id =>
            val (started, interrupted) = signals(id)
            for
              _ <- within(started.get, s"task $id did not start")
              t0 <- IO.monotonic
              _ <- admin.tasks.cancel(id, "the lab's cancel")
              t1 <- within(interrupted.get, s"task $id, cancelled, was not interrupted")
            yield (t1 - t0.toNanos) / 1e6
          } <* waitUntil(worker.stats.map(_.cancelled >= n.toLong)).timeoutTo(60.seconds, IO.unit)
        }
      seen <- cancelled
    yield (times, seen)
