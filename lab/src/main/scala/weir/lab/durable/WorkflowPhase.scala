package weir.lab.durable

import cats.effect.IO
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.lab.Stats
import weir.lab.durable.WorkflowPlan.{Node, Part, Scenario}
import weir.postgres.*

import scala.concurrent.duration.*

/**
 * The workflow run of `./weir lab durable --only workflow`: first a graph's throughput against independent
 * tasks' (no kills), then its scenarios ([[WorkflowPlan]]) one after the other, a fan-out and fan-in, a
 * chain, random graphs and batches, on worker JVMs that record each run ([[LabWorker]]'s `workflow` mode),
 * SIGKILLed and with the server restarted as the kill run's ([[Chaos]]); then what the records say of it
 * ([[WorkflowCheck]]).
 */
object WorkflowPhase:

  /** How long each scenario took, from its first enqueue to its last task's end (as the lab saw it). */
  final case class Timing(scenario: Scenario, seconds: Double, stalled: Boolean)

  final case class WorkflowRun(
      sizes: WorkflowPlan.Sizes,
      findings: WorkflowCheck.Findings,
      kills: Vector[KillPhase.Kill],
      restarts: Vector[KillPhase.Restart],
      timings: Vector[Timing],
      timedTasks: Int,
      rounds: Vector[GraphRounds.Round],
      minKills: Int,
      killEvery: Option[FiniteDuration] = None
  ):
    /** The median of the rounds' ratios, graph over independent (each round's arms run back to back). */
    def graphOverIndependent: Option[Double] = median(_.ratio)

    /** The median of the rounds' ratios, kept independent tasks over independent ones. */
    def keptOverIndependent: Option[Double] = median(_.keptRatio)

    /** The median of the rounds' ratios, graph over kept independent tasks. */
    def graphOverKept: Option[Double] = median(_.graphOverKept)

    private def median(ratio: GraphRounds.Round => Double): Option[Double] =
      Option.when(rounds.nonEmpty)(Stats.of(rounds.map(ratio)).median)

  /** A scenario that makes no progress for this long is given up; its unfinished tasks are reported lost. */
  val stallLimit: FiniteDuration = 60.seconds

  def run(
      lab: LabDatabase,
      db: Database[IO],
      queue: String,
      sizes: WorkflowPlan.Sizes,
      workers: Int,
      limit: Int,
      killEvery: Option[FiniteDuration],
      heartbeat: FiniteDuration,
      deadAfter: FiniteDuration,
      restartEvery: Option[FiniteDuration],
      timedTasks: Int,
      rounds: Int,
      timedWorkers: Int,
      minKills: Int
  ): IO[WorkflowRun] =
    val s = lab.schema
    val args = List(
      lab.url,
      s.name,
      queue,
      limit.toString,
      "workflow",
      heartbeat.toMillis.toString,
      deadAfter.toMillis.toString
    )
    val plan = WorkflowPlan.of(sizes)
    val restarting = restartEvery.traverse(every =>
      lab.restart.map((every, _)).liftTo[IO](new IllegalArgumentException(
        "--restart-every: the lab cannot restart a server it did not start (--url or $WEIR_DATABASE_URL)"
      ))
    )
    for
      restartWith <- restarting
      _ <- IO.println(
        s"  workflow: seed ${sizes.seed}; fan-out 1 → ${sizes.fanOut} → 1, chain of ${sizes.chain}, " +
          s"${sizes.dags} graphs of ${sizes.dagTasks}, ${sizes.batches} batches of ${sizes.batchMembers}"
      )
      _ <- lab.read("the executions table")(Fragment.const(
        s"""CREATE TABLE IF NOT EXISTS ${s("wf_executions")} (seq bigserial PRIMARY KEY, task_id bigint,
              payload int, attempt int, worker bigint, batch_completed bigint, batch_dead bigint,
              batch_cancelled bigint, started_at timestamptz DEFAULT clock_timestamp())"""
      ).update.run)
      timed <- GraphRounds.run(lab, db, s"$queue-timed", timedTasks, rounds, timedWorkers, limit)
      chaos <- Chaos.run(
        lab,
        db,
        args,
        workers,
        killEvery,
        restartWith,
        deadAfter,
        active = IO.pure(true),
        end = Chaos.End.Terminated
      )(plan.units.traverse((scenario, parts) => scenarioRun(lab, db, queue, scenario, parts)))
      (timings, record) = chaos
      findings <- lab.read("the workflow run's records")(records(lab, queue)).map((ended, runs) =>
        WorkflowCheck(plan, ended, runs, record.kills, record.restarts)
      )
    yield WorkflowRun(
      sizes,
      findings,
      record.kills,
      record.restarts,
      timings,
      timedTasks,
      timed,
      minKills,
      killEvery
    )

  /** Enqueues a scenario's parts in turn, then waits until none of its tasks is left (or it stalls). */
  private def scenarioRun(
      lab: LabDatabase,
      db: Database[IO],
      queue: String,
      scenario: Scenario,
      parts: Vector[Part]
  )
      : IO[Timing] =
    val left = lab.read("the tasks left")(
      (Fragment.const(s"SELECT count(*) FROM ${lab.schema("tasks")} WHERE queue = ") ++ fr0"$queue")
        .query[Long].unique
    )
    def await(last: Long, since: FiniteDuration): IO[Boolean] =
      (IO.sleep(100.millis) *> (left, IO.monotonic).tupled).flatMap { (n, now) =>
        if n == 0 then IO.pure(false)
        else if n != last then await(n, now)
        else if now - since > stallLimit then IO.pure(true)
        else await(last, since)
      }
    for
      t0 <- IO.monotonic
      _ <- parts.traverse_(enqueue(lab, db, queue, _))
      stalled <- IO.monotonic.flatMap(await(-1, _))
      t1 <- IO.monotonic
      timing = Timing(scenario, (t1 - t0).toMillis / 1e3, stalled)
      _ <- IO.println(
        f"  workflow ${scenario.label}: ${timing.seconds}%.1f s" +
          (if stalled then s" (given up: no progress for ${stallLimit.toSeconds} s)" else "")
      )
    yield timing

  private def task(n: Node): NewTask[Int] =
    NewTask(n.payload, maxAttempts = if n.fails then 1 else NewTask.defaultMaxAttempts)

  /** The tasks `nodes` as a graph of `q`, each under its key as handle. */
  private[durable] def graphOf(q: TaskQueue[IO, Int], nodes: Vector[Node]): TaskGraph =
    nodes.foldLeft(TaskGraph.empty)((g, n) =>
      g.add(
        n.key.toString,
        q,
        task(n),
        after = n.parents.map(e =>
          if e.anyOutcome then After.finished(e.parent.toString) else After.completed(e.parent.toString)
        )
      )
    )

  /**
   * Enqueues a part, riding out a restart: a write is tried again only once the lab has read that it did
   * not commit (the task with its first payload is not in the queue), as a commit whose answer was lost
   * would otherwise be made twice. A batch's close is idempotent, and tried again as it is.
   */
  private def enqueue(lab: LabDatabase, db: Database[IO], queue: String, part: Part): IO[Unit] =
    val q = TaskQueue[IO, Int](db, queue)
    val batches = Batches(db)
    def having(payload: Int): ConnectionIO[Option[Long]] =
      (Fragment.const(s"SELECT id FROM ${lab.schema("tasks")} WHERE queue = ") ++
        fr0"$queue AND payload = to_jsonb($payload::int) UNION ALL " ++
        Fragment.const(s"SELECT id FROM ${lab.schema("finished")} WHERE queue = ") ++
        fr0"$queue AND payload = to_jsonb($payload::int)").query[Long].to[Vector].map(_.headOption)
    def once[A](what: String, committed: ConnectionIO[Option[A]])(io: IO[A]): IO[A] =
      Retrying(what)(io.handleErrorWith { e =>
        if !Retrying.transient(e) then IO.raiseError(e)
        else lab.read(what)(committed).flatMap(_.liftTo[IO](e))
      })
    part match
      case Part.Graph(nodes) =>
        once("a graph's enqueue", having(nodes.head.payload).map(_.void))(graphOf(q, nodes).enqueue(db).void)
      case Part.Batch(callback, plain, graph) =>
        val opened = having(callback).flatMap(_.flatTraverse(id =>
          (Fragment.const(s"SELECT id FROM ${lab.schema("batches")} WHERE callback = ") ++ fr0"$id")
            .query[Long].option
        )).map(_.map(BatchId(_)))
        for
          batch <- once("a batch's open", opened)(batches.open(q, NewTask(callback)))
          _ <- plain.headOption.traverse_(first =>
            once(
              "a batch's members",
              having(first.payload).map(_.void)
            )(batches.add(batch, q, plain.map(task)).void)
          )
          _ <- graph.headOption.traverse_(first =>
            once(
              "a batch's graph",
              having(first.payload).map(_.void)
            )(batches.addGraph(batch, graphOf(q, graph)).void)
          )
          _ <- Retrying("a batch's close")(batches.close(batch))
        yield ()

  /** The queue's `finished` rows and the workers' records of runs, in the order they were written. */
  private def records(lab: LabDatabase, queue: String)
      : ConnectionIO[(Vector[WorkflowCheck.Ended], Vector[WorkflowCheck.Run])] =
    val s = lab.schema
    val ended =
      (Fragment.const(
        s"""SELECT abs((payload #>> '{}')::int), id, state::text, (extract(epoch FROM finished_at) * 1000)::float8
          FROM ${s("finished")} WHERE queue = """
      ) ++ fr0"$queue").query[(Int, Long, String, Double)].map((k, id, state, at) =>
        WorkflowCheck.Ended(k, id, state, at)
      )
        .to[Vector]
    val runs = Fragment.const(
      s"""SELECT abs(payload), task_id, worker, (extract(epoch FROM started_at) * 1000)::float8, batch_completed,
                 batch_dead, batch_cancelled
          FROM ${s("wf_executions")} ORDER BY seq"""
    ).query[(Int, Long, Long, Double, Option[Long], Option[Long], Option[Long])].map(
      (k, id, w, at, c, d, x) =>
        WorkflowCheck.Run(k, id, w, at, (c, d, x).tupled)
    ).to[Vector]
    (ended, runs).tupled
