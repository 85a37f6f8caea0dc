package weir.lab.durable

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import scopt.OParser
import weir.cli.{CommandLine, Durations}
import weir.cli.CommandLine.positive
import weir.lab.{Experiment, Stats}
import weir.lab.report.ExperimentIo
import weir.postgres.Database

import java.nio.file.{Path, Paths}
import scala.concurrent.duration.*

/**
 * `./weir lab durable`: weir-postgres on a real server. Enqueue rate; no-op tasks worked per second by
 * worker processes (beside River's own benchmark on the same server with `--river`); enqueue-to-start
 * latency of an idle worker with and without notifications; and a run whose workers record every
 * execution while a random one is SIGKILLed every `--kill-every`, counting lost tasks, duplicates and
 * per-key order violations, and timing each rescue. With `--restart-every D`, the embedded server is
 * also restarted every D during that run. With `--history N`, claim time as the `finished` history grows
 * to N rows ([[HistoryPhase]]); with `--only control`, the queue controls: pause → last claim, the most
 * running tasks seen under a queue's limit, the rate achieved against the one asked ([[ControlPhase]]);
 * with `--only workflow`, task graphs and batches on worker JVMs SIGKILLed (and the server restarted) as in
 * the kill run, checked against their plan, and a graph's throughput against independent tasks'
 * ([[WorkflowPhase]]); `--only` runs some phases alone. An error the run cannot survive ends it with one line naming the phase
 * and the cause ([[DurableLab.PhaseFailed]]), exit code 1.
 */
object DurableLab extends Experiment:
  val label = "durable"
  val summary = "weir-postgres: enqueue rate, throughput (vs River), idle latency, workers SIGKILLed mid-run"

  /** The phases of a run, by the names `--only` takes. */
  enum Phase(val label: String):
    case Enqueue extends Phase("enqueue")
    case Throughput extends Phase("throughput")
    case Latency extends Phase("latency")
    case Kill extends Phase("kill")
    case History extends Phase("history")
    case Control extends Phase("control")
    case Workflow extends Phase("workflow")

  object Phase:
    def named(label: String): Option[Phase] = values.find(_.label == label)

  final case class Settings(
      url: Option[String] = sys.env.get("WEIR_DATABASE_URL").filter(_.nonEmpty),
      tasks: Int = 200000,
      workers: Int = 2,
      throughputWorkers: Int = 1,
      rounds: Int = 3,
      enqueuers: Int = 2,
      limit: Int = 64,
      keys: Int = 100,
      killEvery: Option[FiniteDuration] = None,
      restartEvery: Option[FiniteDuration] = None,
      heartbeat: FiniteDuration = 1.second,
      deadAfter: FiniteDuration = 10.seconds,
      latencySamples: Int = 200,
      latencyWarmup: Int = 2000,
      river: Boolean = false,
      riverScript: String = "../shared/peers/river/run.sh",
      quick: Boolean = false,
      history: Option[Long] = None,
      seed: Option[Long] = None,
      only: Option[Set[Phase]] = None,
      json: Option[Path] = None
  ):
    /**
     * Whether `phase` runs: every phase but the history one (which needs `--history`), the control one and
     * the workflow one, or those of `--only`.
     */
    def runs(phase: Phase): Boolean =
      only.fold(
        phase != Phase.Control && phase != Phase.Workflow && (phase != Phase.History || history.isDefined)
      )(_.contains(phase))
    def n: Int = if quick then tasks.min(20000) else tasks
    def kills: Option[FiniteDuration] = killEvery.orElse(Option.when(quick)(2.seconds))
    def samples: Int = if quick then latencySamples.min(50) else latencySamples
    def warmup: Int = if quick then latencyWarmup.min(300) else latencyWarmup
    def throughputRounds: Int = if quick then 1 else rounds
    def rateWindow: FiniteDuration = if quick then 5.seconds else 30.seconds
    def cancels: Int = if quick then 30 else 200

    /**
     * The control phase's sizes: the backlog the pause comes into (large enough that, were the pause not to
     * hold, the workers would still find tasks to claim in the quiet spell after it), and the tasks run under
     * the queue's limit on running ones.
     */
    def pauseBacklog: Int = if quick then 50000 else 200000
    def limitTasks: Int = if quick then 1000 else 4000

    /**
     * The workflow run's scenarios, fractions of the tasks per phase (`n`; 200,000 give a 1 → 10,000 → 1
     * fan-out, a chain of 1,000, 20 graphs of 200 tasks and 10 batches of 200 members), their random graphs
     * and batches drawn from `seed`.
     */
    def workflowSizes(seed: Long): WorkflowPlan.Sizes =
      WorkflowPlan.Sizes(
        fanOut = (n / 20).max(2),
        chain = (n / 200).max(2),
        dags = (n / 10000).max(2),
        dagTasks = (n / 400).max(10).min(200),
        batches = (n / 20000).max(2),
        batchMembers = (n / 400).max(8).min(200),
        seed = seed
      )

    /** The workflow run kills a worker about every 2 s unless `--kill-every` says otherwise. */
    def workflowKills: FiniteDuration = killEvery.getOrElse(2.seconds)

    /** Tasks of each of the workflow run's timed rounds (independent tasks, then a graph as large). */
    def timedTasks: Int = (n / 10).max(3)

    /** The fewest kills the full workflow run must see land (none asked of a quick one). */
    def minKills: Int = if quick then 0 else 3

  private val builder = OParser.builder[Settings]
  val parser: OParser[Unit, Settings] =
    import builder.*
    def duration(option: String) = Durations.opt(builder, option).validate(Durations.positive(s"--$option"))
    OParser.sequence(
      programName("weir lab durable"),
      head("weir-postgres on a real server: enqueue, throughput, latency, and workers killed mid-run"),
      help("help").text("print this help"),
      opt[String]("url").valueName("URL").action((u, s) => s.copy(url = Some(u)))
        .text(
          "a PostgreSQL server (default: $WEIR_DATABASE_URL, else an embedded server started for the run)"
        ),
      opt[Int]("tasks").valueName("N").validate(positive("--tasks")).action((n, s) => s.copy(tasks = n))
        .text(
          "tasks per phase (default 200000; 20000 with --quick); the workflow run's scenarios are fractions of it"
        ),
      opt[Int]("workers").valueName("W").validate(positive("--workers")).action((n, s) => s.copy(workers = n))
        .text("worker processes (default 2)"),
      opt[Int]("throughput-workers").valueName("W").validate(positive("--throughput-workers"))
        .action((n, s) => s.copy(throughputWorkers = n))
        .text("worker processes of the throughput run (default 1, as River's benchmark)"),
      opt[Int]("rounds").valueName("R").validate(positive("--rounds")).action((n, s) => s.copy(rounds = n))
        .text(
          "throughput rounds, each followed by River's benchmark with --river; the median is reported (default 3; 1 with --quick)"
        ),
      opt[Int]("enqueuers").valueName("E").validate(positive("--enqueuers"))
        .action((n, s) => s.copy(enqueuers = n))
        .text("the enqueue rate is measured from one enqueuer, then from E at once (default 2; 1: only one)"),
      opt[Int]("limit").valueName("N").validate(positive("--limit")).action((n, s) => s.copy(limit = n))
        .text("each worker's concurrency limit (default 64)"),
      opt[Int]("keys").valueName("K")
        .validate(k => if k >= 0 then success else failure(s"--keys must be >= 0, was: $k"))
        .action((n, s) => s.copy(keys = n)).text(
          "ordering keys over every 4th task of the kill run (default 100; 0: none)"
        ),
      duration("kill-every")
        .action((d, s) => s.copy(killEvery = Some(d)))
        .text(
          "SIGKILL a random worker about every DURATION (e.g. 3s) and start another (default: never; 2s with --quick, and in the workflow run)"
        ),
      duration("restart-every")
        .action((d, s) => s.copy(restartEvery = Some(d)))
        .text(
          "restart the embedded server every DURATION (e.g. 5s) during the kill and workflow runs: stopped, then started on its port and data (default: never; not with --url)"
        ),
      duration("heartbeat")
        .action((d, s) => s.copy(heartbeat = d))
        .text("the kill run's worker heartbeat (default 1s)"),
      duration("dead-after")
        .action((d, s) => s.copy(deadAfter = d))
        .text(
          "the kill run's deadAfter (default 10s, the library's: a killed worker is found by its ended session)"
        ),
      opt[Unit]("river").action((_, s) => s.copy(river = true))
        .text("also run River's own benchmark (../shared/peers/river/run.sh; needs Go) on the same server"),
      opt[String]("river-script").valueName("PATH").action((p, s) => s.copy(riverScript = p))
        .text(s"where River's benchmark script is (default ${Settings().riverScript})"),
      opt[Unit](
        "quick"
      ).action((_, s) => s.copy(quick = true)).text(
        "under a minute: 20000 tasks, a kill every 2s (so the workflow run's scenarios are a tenth as large)"
      ),
      opt[Long]("history").valueName("N").validate(positive("--history"))
        .action((n, s) => s.copy(history = Some(n)))
        .text(
          "also measure claim time and no-op throughput with 0, N/10, …, N finished tasks in the history, each with a backlog of --tasks tasks (default: not run)"
        ),
      opt[Seq[String]]("only").valueName("PHASE,...")
        .validate(ps =>
          ps.find(Phase.named(_).isEmpty).fold(success)(p =>
            failure(s"--only takes phases among ${Phase.values.map(_.label).mkString(", ")}, was: $p")
          )
        )
        .action((ps, s) => s.copy(only = Some(ps.flatMap(Phase.named).toSet)))
        .text(
          "run only these phases: enqueue, throughput (and --river), latency, kill, history, control, workflow (default: all but history, control and workflow)"
        ),
      opt[Long]("seed").valueName("N").action((n, s) => s.copy(seed = Some(n)))
        .text("the seed of the workflow run's random graphs and batches (default: drawn, and printed)"),
      opt[String]("json").valueName("FILE").action((f, s) => s.copy(json = Some(Paths.get(f))))
        .text("also write the results as JSON (default: none)"),
      checkConfig(s =>
        if s.deadAfter <= s.heartbeat then
          failure(
            s"--dead-after must be longer than --heartbeat (${Durations.show(s.heartbeat)}), was: ${Durations.show(s.deadAfter)}"
          )
        else if s.runs(Phase.History) && s.history.isEmpty then failure("--only history needs --history N")
        else if s.restartEvery.isDefined && s.url.isDefined then
          failure(
            "--restart-every restarts the embedded server the lab starts; it cannot restart the server at " +
              s"${weir.postgres.DatabaseConfig(s.url.get).redactedUrl} (--url or $$WEIR_DATABASE_URL), which it did not start"
          )
        else if s.restartEvery.isDefined && !s.runs(Phase.Kill) && !s.runs(Phase.Workflow) then
          failure(
            "--restart-every restarts the server during the kill and workflow runs, which --only leaves out"
          )
        else success
      )
    )

  /** What the run measured; a phase that did not run is `None` (or empty). */
  final case class Results(
      enqueue: Option[Phases.Enqueue],
      throughput: Vector[Phases.Round],
      idleNotify: Vector[Phases.Latency],
      idlePoll: Vector[Phases.Latency],
      killRun: Option[KillPhase.KillRun],
      history: Option[HistoryPhase.History],
      control: Option[ControlPhase.Control] = None,
      workflow: Option[WorkflowPhase.WorkflowRun] = None
  ):
    /** weir's median throughput round, tasks per second. */
    def workedPerSecond: Option[Double] =
      Option.when(throughput.nonEmpty)(Stats.of(throughput.map(_.worked)).median)

    /** River's median round, or why River did not run. */
    def riverPerSecond: Either[String, Double] =
      throughput.map(_.river).collectFirst { case Left(why) => why } match
        case Some(why) => Left(why)
        case None if throughput.isEmpty => Left("not run")
        case None => Right(Stats.of(throughput.flatMap(_.river.toOption)).median)

    /** The median of the rounds' ratios weir / River (each round's pair measured back to back). */
    def ratio: Option[Double] =
      Option.when(throughput.nonEmpty && riverPerSecond.isRight)(
        Stats.of(throughput.flatMap(r => r.river.toOption.map(r.worked / _))).median
      )

    def failures: List[String] =
      killRun.toList.flatMap(k =>
        List(
          Option.when(k.lost != 0)(s"${k.lost} task(s) lost"),
          Option.when(k.unexplainedDuplicates != 0)(
            s"${k.unexplainedDuplicates} duplicate(s) not preceded by the kill of the worker that ran the task before: " +
              k.unexplained.take(5).mkString(", ")
          ),
          Option.when(k.keyViolations != 0)(s"${k.keyViolations} key(s) out of order")
        ).flatten
      ) ++ control.toList.flatMap(c =>
        List(
          Option.when(c.maxRunningSeen > c.globalLimit)(
            s"${c.maxRunningSeen} tasks running at once under a queue limit of ${c.globalLimit}"
          ),
          Option.when(c.claimsAfterQuiet != 0)(s"${c.claimsAfterQuiet} claim(s) of a queue paused for 2 s"),
          Option.when(c.rateError > 0.05)(
            f"rate ${c.rateSeen}%.1f/s against ${c.rateAsked}%.0f/s asked (more than 5%% off)"
          ),
          Option.when(c.scheduleDuplicates != 0)(s"${c.scheduleDuplicates} schedule tick(s) enqueued twice"),
          Option.when(c.scheduleGaps != 0)(s"${c.scheduleGaps} schedule tick(s) never enqueued"),
          Option.when(c.revokedStarted != 0)(s"${c.revokedStarted} revoked claim(s) started"),
          Option.when(c.cancelledSeen != c.cancels.toLong)(
            s"${c.cancelledSeen} task(s) cancelled in finished of ${c.cancels} cancels"
          )
        ).flatten
      ) ++ workflow.toList.flatMap(WorkflowReport.failures)

  override def check(args: List[String]): Either[String, Unit] = CommandLine.check(parser, args, Settings())

  /** A phase of the run (`start` and `report` included) failed: `phase` names it, the message says why. */
  final class PhaseFailed(val phase: String, cause: Throwable)
      extends RuntimeException(s"the $phase phase failed: ${Retrying.firstLine(cause)}", cause)

  /** What the run prints when `e` ended it: one line, without a stack trace. */
  def failureLine(e: Throwable): String = s"weir lab durable: ${Retrying.firstLine(e)}"

  def run(args: List[String]): IO[ExitCode] =
    CommandLine.runWithCode(parser, args, Settings()) { s =>
      execute(s).attempt.flatMap {
        case Left(e) => IO.consoleForIO.errorln(failureLine(e)).as(ExitCode(1))
        case Right(r) if r.failures.isEmpty => IO.pure(ExitCode.Success)
        case Right(r) => IO.consoleForIO.errorln(s"FAILED: ${r.failures.mkString("; ")}").as(ExitCode(1))
      }
    }

  /** `io`, whose failure, unless a phase inside it already named itself, is `phase`'s. */
  private def in[A](phase: String)(io: IO[A]): IO[A] =
    io.adaptError {
      case e: PhaseFailed => e
      case e => new PhaseFailed(phase, e)
    }

  def execute(s: Settings): IO[Results] =
    in("start")(LabDatabase.resource(s.url).use { lab =>
      for
        _ <- IO.println(
          s"weir lab durable — ${
              if lab.embedded then "embedded PostgreSQL"
              else "server " + weir.postgres.DatabaseConfig(lab.url).redactedUrl
            }, " +
            s"schema ${lab.schema}, ${s.n} tasks, ${s.workers} worker processes × limit ${s.limit}, " +
            s"${Runtime.getRuntime.availableProcessors} cores, JDK ${System.getProperty("java.version")}"
        )
        _ <- IO.raiseError(new IllegalArgumentException(
          "--restart-every needs a server the lab started: the embedded one, not --url"
        )).whenA(s.restartEvery.isDefined && lab.restart.isEmpty)
        _ <- Database.migrate[IO](lab.config())
        results <- Database.connect[IO](lab.config()).use { db =>
          def phase[A](p: Phase)(io: IO[A]): IO[Option[A]] =
            if s.runs(p) then in(p.label)(io).map(Some(_)) else IO.none
          for
            enq <- phase(Phase.Enqueue)(Phases.enqueue(db, "enqueue", s.n, s.keys, s.enqueuers).flatTap(r =>
              IO.println(
                f"  enqueue: ${r.one}%.0f tasks/s" +
                  r.concurrent.fold("")((e, c) => f", $c%.0f from $e enqueuers")
              )
            ))
            river =
              if s.river then Phases.river(lab, s.riverScript, s.n)
              else IO.pure(Left("not run (--river)"))
            rounds <- phase(Phase.Throughput)(
              Phases.throughput(lab, db, "work", s.n, s.throughputWorkers, s.limit, s.throughputRounds, river)
            )
            notify <- phase(Phase.Latency)(timed("idle latency, NOTIFY")(
              Phases.idleLatency(db, "idle-notify", s.samples, s.warmup, listen = true, poll = 1.second)
            ))
            poll <- phase(Phase.Latency)(timed("idle latency, polling")(
              // this JVM's claim path is compiled by now: a few tasks warm the new worker's connections
              Phases.idleLatency(db, "idle-poll", s.samples, warmup = 10, listen = false, poll = 100.millis)
            ))
            kill <- phase(Phase.Kill)(timed("kill run")(KillPhase.run(
              lab,
              db,
              "kill",
              s.n,
              s.workers,
              s.limit,
              s.keys,
              s.kills,
              s.heartbeat,
              s.deadAfter,
              restartEvery = s.restartEvery
            )))
            // last, in a schema of its own: its millions of rows slow no other phase's queries
            history <- s.history.filter(_ => s.runs(Phase.History)).traverse(h =>
              in(Phase.History.label)(timed("history")(HistoryPhase.run(lab, h, s.n)))
            )
            control <-
              phase(Phase.Control)(timed("control")(ControlPhase.run(
                db,
                4,
                s.pauseBacklog,
                s.limitTasks,
                s.rateWindow,
                s.cancels
              )))
            seed <- s.seed.fold(IO(java.util.concurrent.ThreadLocalRandom.current().nextLong()))(IO.pure)
            workflow <- phase(Phase.Workflow)(timed("workflow")(WorkflowPhase.run(
              lab,
              db,
              "workflow",
              s.workflowSizes(seed),
              s.workers,
              s.limit,
              Some(s.workflowKills),
              s.heartbeat,
              s.deadAfter,
              s.restartEvery,
              timedTasks = s.timedTasks,
              rounds = s.throughputRounds,
              timedWorkers = s.throughputWorkers,
              minKills = s.minKills
            )))
          yield Results(enq, rounds.orEmpty, notify.orEmpty, poll.orEmpty, kill, history, control, workflow)
        }
        _ <- in("report")(
          IO.println(DurableReport.table(s, results)) *>
            s.json.traverse_(p => ExperimentIo.writeJson(p, DurableReport.json(s, results)))
        )
      yield results
    })

  private def timed[A](phase: String)(io: IO[A]): IO[A] =
    io.timed.flatMap((t, a) => IO.println(f"  $phase: ${t.toMillis / 1e3}%.1f s").as(a))
