package weir.postgres

import cats.effect.kernel.{Async, Deferred, Resource}
import cats.effect.std.Queue
import cats.syntax.all.*
import org.typelevel.log4cats.LoggerFactory
import org.typelevel.log4cats.noop.NoOpFactory
import weir.{Pipeline, Running, Source, Validation}
import weir.postgres.internal.*

import java.util.concurrent.atomic.AtomicBoolean

/**
 * A worker process serving one queue: its claims feed an ordinary weir [[Pipeline]], so every control of
 * the engine (fixed or adaptive limit, rate limit, in-memory retries and task timeout, failure policy,
 * progress, summary, drain) works unchanged, and each task's outcome is written back to the database.
 *
 * {{{
 * DurableWorker.start[IO, Email, Unit](db, WorkerConfig(queue = "emails")) { source =>
 *   Pipeline(source).process(job => send(job.payload)).withLimit(Limit.fixed(50))
 * }.use(worker => IO.never)
 * }}}
 *
 * What becomes of a claimed task, by its [[TaskOutcome]] in the pipeline:
 *   - succeeded: completed (kept in `finished` or deleted, see [[WorkerConfig.keepCompleted]]); under
 *     [[DurableWorker.startSnoozing]], a handler's [[Job.snooze]] makes it available again after its delay
 *     instead, its attempt not counted;
 *   - failed: available again after the configured backoff, with its error recorded, or dead once it has
 *     used its `maxAttempts` (or at once when `backoff.retryOn` rejects the error); a task interrupted
 *     because the worker stopped is retried at once (or dead, if that was its last attempt);
 *   - not started (drained, cancelled, failed fast, refused): handed back at once, its attempt not counted.
 *
 * Whatever the outcome, except a success, a task whose cancel was requested ([[TaskActions.cancel]]) moves to
 * `finished` as cancelled instead; an interrupted one was interrupted for that reason.
 *
 * Release: the pipeline is drained (running tasks get [[WorkerConfig.releaseGrace]]), every result is
 * written (waiting at most `releaseGrace` for an unreachable database), every claim still held is handed
 * back and the worker's row is removed. A claim whose task never started goes back uncounted; one whose
 * task ran but whose result could not be written goes back counted, as a failed attempt. A worker that
 * dies without a release stops heartbeating, and any other worker rescues its running tasks: within about
 * a heartbeat when the process died (SIGKILL, OOM) and the server ended its session, and once its
 * heartbeat is older than [[WorkerConfig.deadAfter]] when the machine or its network is lost, or when the
 * worker does not listen (see [[WorkerConfig]]).
 */
trait DurableWorker[F[_], A]:

  /** This process's id in the workers table (the lease owner of its claims). */
  def id: Long

  /**
   * The pipeline, to change its limit or watch its metrics. Stop it with [[drain]] rather than
   * `running.drain`, which does not stop the claimer: the drain then waits for the claimer's idle wait (up
   * to the poll interval, or the deadline) to end, and a claim made meanwhile is only handed back.
   */
  def running: Running[F, Job[A]]

  /**
   * Stops claiming at once, then drains the pipeline: claimed tasks that have not started are handed back
   * (written as soon as the drain ends, like every other result), running ones get `deadline` to finish.
   * Returns the summary.
   * Concurrent calls get the same summary; cancelling the call stops the wait, not the drain.
   */
  def drain(deadline: scala.concurrent.duration.FiniteDuration): F[weir.Summary[Job[A]]]

  /**
   * What this worker has claimed and written so far. A batch of results is counted once its transaction
   * has returned, so another process, or this worker's claimer, may see it committed a moment before it is
   * counted here: read after the worker's release for its final figures.
   */
  def stats: F[WorkerStats]

object DurableWorker:

  /**
   * Registers a worker in `db` and starts the pipeline `build` makes from the durable source. The source
   * never ends unless [[WorkerConfig.stopWhenEmpty]] is set; stop the worker with [[DurableWorker.drain]]
   * (`worker.drain`) or by releasing the resource. Every task whose handler succeeds is completed: a handler
   * that may snooze is started with [[startSnoozing]], and `start` does not compile with a result type `B`
   * that a snooze is a value of ([[Handled.NeverSnoozes]]), so that no snooze is taken for a success.
   *
   * Errors: only starting fails the resource: [[weir.InvalidSettings]] naming every bad value of `config`
   * (see [[WorkerConfig.errors]]), before any connection is opened; [[DatabaseUnreachable]] if the worker's
   * connections cannot be opened, or the driver's error if registering the worker fails. Once started, a failing database is
   * ridden out (claims, results, heartbeats, rescues and prunes are retried, and counted in
   * [[WorkerStats]]).
   *
   * Logs: through the `LoggerFactory` in scope (none: nothing is logged), under `weir.postgres.worker.*`:
   * each part's streak of database errors once when it begins (WARN) and once when it ends (INFO, with its
   * count), rescues, this worker taken for dead, the queue paused and resumed; never a line per task at
   * INFO. `docs/guide.md` ("Logging") lists every line.
   */
  def start[F[_], A, B](db: Database[F], config: WorkerConfig)(
      build: Source[F, Job[A]] => Pipeline[F, Job[A], B]
  )(using
      F: Async[F],
      codec: PayloadCodec[A],
      neverSnoozes: Handled.NeverSnoozes[B]
  )(using
      logs: LoggerFactory[F] = NoOpFactory[F]
  ): Resource[F, DurableWorker[F, A]] =
    launch(db, config, build, _ => Finish.Answer.Complete)

  /**
   * [[start]] for a handler that may snooze: it answers [[Handled.Done]] with its value (the task is then
   * completed) or its job's [[Job.snooze]] (the task goes back to its queue, available again after the
   * delay, its attempt not counted). Everything else is as [[start]] says.
   *
   * {{{
   * DurableWorker.startSnoozing[IO, Invoice, Receipt](db, WorkerConfig(queue = "invoices")) { source =>
   *   Pipeline(source).process { job =>
   *     ready.flatMap(open => if open then post(job.payload).map(Handled.Done(_)) else IO.pure(job.snooze(10.minutes)))
   *   }
   * }
   * }}}
   */
  def startSnoozing[F[_], A, B](db: Database[F], config: WorkerConfig)(
      build: Source[F, Job[A]] => Pipeline[F, Job[A], Handled[B]]
  )(using
      F: Async[F],
      codec: PayloadCodec[A]
  )(using
      logs: LoggerFactory[F] = NoOpFactory[F]
  ): Resource[F, DurableWorker[F, A]] =
    launch[F, A, Handled[B]](
      db,
      config,
      build,
      {
        case s: Handled.Snoozed => Finish.Answer.Snooze(s)
        case Handled.Done(_) => Finish.Answer.Complete
      }
    )

  /**
   * [[start]] for a handler whose value is its task's result: each task whose handler succeeds is completed
   * with its value, encoded as JSON by `results`, stored in the task's `finished` row (kept there whatever
   * [[WorkerConfig.keepCompleted]] says, until [[Retention.completed]] prunes it) for the tasks that wait
   * for it to read ([[Job.parents]]). A value whose JSON is `null` (`None`, with circe) stores none, and the
   * task is completed as [[start]] completes it. A result over [[WorkerConfig.maxResultBytes]] of JSON sends
   * the task to dead at once, with an error naming its size: its handler would make it again. Everything
   * else is as [[start]] says; a handler that snoozes is not recorded ([[startSnoozing]]).
   *
   * {{{
   * DurableWorker.startRecording[IO, Page, PageStats](db, WorkerConfig(queue = "pages")) { source =>
   *   Pipeline(source).process(job => fetch(job.payload).map(body => PageStats(body.length)))
   * }
   * }}}
   *
   * [[Job.completeIn]] stores no result: a handler that completes its task in its own transaction records
   * nothing.
   */
  def startRecording[F[_], A, R](db: Database[F], config: WorkerConfig)(
      build: Source[F, Job[A]] => Pipeline[F, Job[A], R]
  )(using
      F: Async[F],
      codec: PayloadCodec[A],
      results: PayloadCodec[R],
      neverSnoozes: Handled.NeverSnoozes[R]
  )(using
      logs: LoggerFactory[F] = NoOpFactory[F]
  ): Resource[F, DurableWorker[F, A]] =
    launch(db, config, build, r => Finish.Answer.Record(results.encode(r)))

  /**
   * The worker of [[start]], [[startSnoozing]] and [[startRecording]]: `answer` says what each handler value
   * asks of its claim.
   */
  private def launch[F[_], A, B](
      db: Database[F],
      config: WorkerConfig,
      build: Source[F, Job[A]] => Pipeline[F, Job[A], B],
      answer: B => Finish.Answer
  )(using
      F: Async[F],
      codec: PayloadCodec[A],
      logs: LoggerFactory[F]
  ): Resource[F, DurableWorker[F, A]] =
    // nothing of `db` is read before the config is checked
    lazy val sql = new Sql(db.schema)
    for
      _ <- Validation.resource("WorkerConfig", config.errors)
      // claims and results on one pool, heartbeats, rescues and prunes on another: a busy claim path never
      // delays a heartbeat into a false rescue. Both are shared by every worker of `db`
      pools <- db.sharedWorkerPools
      xa = pools.claims
      maintenance = pools.maintenance
      counters = new Counters
      claims = new Claims
      wake <- Resource.eval(Queue.dropping[F, Unit](1))
      gate <- Resource.eval(IdleGate[F])
      limited = new AtomicBoolean
      liveness = new Liveness(config.heartbeat)
      // the queue gets its row of controls here, so that an operator can find it and set them
      // the registration is the worker's first beat
      sentAt <- Resource.eval(F.delay(System.nanoTime()))
      owner <- Resource.make(
        xa(sql.register(config.name, config.heartbeat.toMillis) <* sql.addQueue(config.queue))
          .flatTap(_ => F.delay(liveness.confirmed(sentAt)))
      )(owner =>
        LastStep.handBack(xa, sql, config.queue, owner, claims, counters).handleErrorWith(e =>
          F.delay(counters.error(e))
        )
      )
      worker = new WorkerContext(owner, config, db.schema, sql, claims, counters, liveness, limited)
      log = new WorkerLog[F](logs, config.queue, owner)
      // the session and the heartbeat outlive the completer: a worker writing its last results is alive
      _ <-
        if config.listen then
          Resource.eval(
            log.faults(
              "session",
              "the workers' session (LISTEN, and the locks that show them alive)",
              counters
            )
          ).flatMap(faults =>
            db.sessions.use(WorkerSession.hub(
              db.dedicated,
              db.schema,
              WorkerSession.checkEvery(db.readTimeout)
            ))
              .flatMap(_.join(new WorkerSession.Member(worker, gate, wake, faults)))
          )
        else Resource.unit[F]
      _ <- Heartbeat.resource(maintenance, worker, log)
      completer <- Completer.resource(xa, worker, wake.tryOffer(()).void, log)
      _ <- Rescuer.resource(maintenance, worker, log)
      _ <- HeadRepair.resource(maintenance, worker, log)
      _ <- config.retention.fold(Resource.unit[F])(r =>
        Pruner.resource(maintenance, new AdminSql(db.schema), r, log, counters)
      )
      stop <- Resource.eval(Deferred[F, Unit])
      claimFaults <- Resource.eval(log.faults("claims", "claiming", counters))
      claimer = new Claimer[F, A](xa, worker, completer, wake, gate, stop, log, claimFaults)
      started <- build(Source.refusable(claimer.stream)).startWithOutcomes
      (pipeline, outcomes) = started
      // the consumer may wait on a full completer that cannot write (the database refusing or gone): it is
      // given one grace, then stopped; the claims whose outcomes it had not queued stay held, as having maybe
      // run, for the worker's last step
      _ <- OutcomeReader.resource(worker, completer, answer)(
        outcomes,
        finish = stop.complete(()) *> pipeline.drain(config.releaseGrace).void
      )
    yield new DurableWorker[F, A]:
      val id: Long = owner
      val running: Running[F, Job[A]] = pipeline
      def drain(deadline: scala.concurrent.duration.FiniteDuration): F[weir.Summary[Job[A]]] =
        stop.complete(()) *> pipeline.drain(deadline)
      def stats: F[WorkerStats] = F.delay(counters.stats)
