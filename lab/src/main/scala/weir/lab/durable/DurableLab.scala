package weir.lab.durable

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import io.circe.Json
import io.circe.syntax.*
import scopt.OParser
import weir.lab.Experiment
import weir.lab.report.{ExperimentIo, Table}
import weir.lab.report.ExperimentIo.{number, positive}
import weir.postgres.Database

import java.nio.file.{Path, Paths}
import scala.concurrent.duration.*

/**
 * `./weir lab durable`: weir-postgres on a real server. Enqueue rate; no-op tasks worked per second by
 * worker processes (beside River's own benchmark on the same server with `--river`); enqueue-to-start
 * latency of an idle worker with and without notifications; and a run whose workers record every
 * execution while a random one is SIGKILLed every `--kill-every`, counting lost tasks, duplicates and
 * per-key order violations, and timing each rescue.
 */
object DurableLab extends Experiment:
  val name = "durable"
  val summary = "weir-postgres: enqueue rate, throughput (vs River), idle latency, workers SIGKILLed mid-run"

  final case class Settings(
      url: Option[String] = sys.env.get("WEIR_DATABASE_URL").filter(_.nonEmpty),
      tasks: Int = 200000,
      workers: Int = 2,
      throughputWorkers: Int = 1,
      limit: Int = 64,
      keys: Int = 100,
      killEvery: Option[FiniteDuration] = None,
      heartbeat: FiniteDuration = 1.second,
      deadAfter: FiniteDuration = 1500.millis,
      latencySamples: Int = 200,
      river: Boolean = false,
      riverScript: String = "../shared/peers/river/run.sh",
      quick: Boolean = false,
      json: Option[Path] = None
  ):
    def n: Int = if quick then tasks.min(20000) else tasks
    def kills: Option[FiniteDuration] = killEvery.orElse(Option.when(quick)(2.seconds))
    def samples: Int = if quick then latencySamples.min(50) else latencySamples
    def warmup: Int = if quick then 300 else 2000

  private val builder = OParser.builder[Settings]
  val parser: OParser[Unit, Settings] =
    import builder.*
    def duration(option: String)(s: String): Either[String, FiniteDuration] =
      Either
        .catchNonFatal(Duration(s))
        .leftMap(_ => s"$option must be a duration such as 3s or 500ms, was: $s")
        .flatMap {
          case d: FiniteDuration if d > Duration.Zero => Right(d)
          case _ => Left(s"$option must be a positive duration, was: $s")
        }
    OParser.sequence(
      programName("weir lab durable"),
      head("weir-postgres on a real server: enqueue, throughput, latency, and workers killed mid-run"),
      help("help").text("print this help"),
      opt[String]("url").valueName("URL").action((u, s) => s.copy(url = Some(u)))
        .text(
          "a PostgreSQL server (default: $WEIR_DATABASE_URL, else an embedded server started for the run)"
        ),
      opt[Int]("tasks").valueName("N").validate(positive("--tasks")).action((n, s) => s.copy(tasks = n))
        .text("tasks per phase (default 200000; 20000 with --quick)"),
      opt[Int]("workers").valueName("W").validate(positive("--workers")).action((n, s) => s.copy(workers = n))
        .text("worker processes (default 2)"),
      opt[Int]("throughput-workers").valueName("W").validate(positive("--throughput-workers"))
        .action((n, s) => s.copy(throughputWorkers = n))
        .text("worker processes of the throughput run (default 1, as River's benchmark)"),
      opt[Int]("limit").valueName("L").validate(positive("--limit")).action((n, s) => s.copy(limit = n))
        .text("each worker's concurrency limit (default 64)"),
      opt[Int]("keys").valueName("K")
        .validate(k => if k >= 0 then success else failure(s"--keys must be >= 0, was: $k"))
        .action((n, s) => s.copy(keys = n)).text(
          "ordering keys over every 4th task of the kill run (default 100; 0: none)"
        ),
      opt[String]("kill-every").valueName("D")
        .validate(d => duration("--kill-every")(d).void)
        .action((d, s) => s.copy(killEvery = duration("--kill-every")(d).toOption))
        .text(
          "SIGKILL a random worker about every D (e.g. 3s) and start another (default: never; 2s with --quick)"
        ),
      opt[String]("heartbeat").valueName("D")
        .validate(d => duration("--heartbeat")(d).void)
        .action((d, s) => s.copy(heartbeat = duration("--heartbeat")(d).toOption.get))
        .text("the kill run's worker heartbeat (default 1s)"),
      opt[String]("dead-after").valueName("D")
        .validate(d => duration("--dead-after")(d).void)
        .action((d, s) => s.copy(deadAfter = duration("--dead-after")(d).toOption.get))
        .text("the kill run's deadAfter (default 1500ms: rescue within two heartbeats)"),
      opt[Unit]("river").action((_, s) => s.copy(river = true))
        .text("also run River's own benchmark (../shared/peers/river/run.sh; needs Go) on the same server"),
      opt[String]("river-script").valueName("PATH").action((p, s) => s.copy(riverScript = p))
        .text("where River's benchmark script is"),
      opt[Unit](
        "quick"
      ).action((_, s) => s.copy(quick = true)).text("under a minute: 20000 tasks, a kill every 2s"),
      opt[String]("json").valueName("FILE").action((f, s) => s.copy(json = Some(Paths.get(f))))
        .text("also write the results as JSON"),
      checkConfig(s =>
        if s.deadAfter <= s.heartbeat then
          failure(s"--dead-after must be longer than --heartbeat (${s.heartbeat}), was: ${s.deadAfter}")
        else success
      )
    )

  final case class Results(
      enqueuePerSecond: Double,
      workedPerSecond: Double,
      riverPerSecond: Either[String, Double],
      idleNotify: Vector[Phases.Latency],
      idlePoll: Vector[Phases.Latency],
      killRun: Phases.KillRun
  ):
    def failures: List[String] =
      List(
        Option.when(killRun.lost != 0)(s"${killRun.lost} task(s) lost"),
        Option.when(killRun.unexplainedDuplicates != 0)(
          s"${killRun.unexplainedDuplicates} duplicate(s) without an earlier run on a killed worker"
        ),
        Option.when(killRun.keyViolations != 0)(s"${killRun.keyViolations} key(s) out of order")
      ).flatten

  def run(args: List[String]): IO[ExitCode] =
    ExperimentIo.runWithCode(parser, args, Settings()) { s =>
      execute(s).flatMap { r =>
        if r.failures.isEmpty then IO.pure(ExitCode.Success)
        else IO.consoleForIO.errorln(s"FAILED: ${r.failures.mkString("; ")}").as(ExitCode(1))
      }
    }

  def execute(s: Settings): IO[Results] =
    LabDatabase.resource(s.url).use { lab =>
      for
        _ <- IO.println(
          s"weir lab durable — ${
              if lab.embedded then "embedded PostgreSQL"
              else "server " + weir.postgres.DatabaseConfig(lab.url).redactedUrl
            }, " +
            s"schema ${lab.schema}, ${s.n} tasks, ${s.workers} worker processes × limit ${s.limit}, " +
            s"${Runtime.getRuntime.availableProcessors} cores, JDK ${System.getProperty("java.version")}"
        )
        _ <- Database.migrate[IO](lab.config())
        results <- Database.connect[IO](lab.config()).use { db =>
          for
            enq <- Phases.enqueue(db, "enqueue", s.n, s.keys).flatTap(r =>
              IO.println(f"  enqueue: $r%.0f tasks/s")
            )
            worked <- Phases.throughput(lab, db, "work", s.n, s.throughputWorkers, s.limit)
              .flatTap(r => IO.println(f"  worked: $r%.0f tasks/s"))
            river <-
              if s.river then
                Phases.river(lab, s.riverScript, s.n).flatTap(r =>
                  IO.println(s"  River: ${r.fold(identity, d => f"$d%.0f jobs/s")}")
                )
              else IO.pure(Left("not run (--river)"))
            notify <- timed("idle latency, NOTIFY")(
              Phases.idleLatency(db, "idle-notify", s.samples, s.warmup, listen = true, poll = 1.second)
            )
            poll <- timed("idle latency, polling")(
              // this JVM's claim path is compiled by now: a few tasks warm the new worker's connections
              Phases.idleLatency(db, "idle-poll", s.samples, warmup = 10, listen = false, poll = 100.millis)
            )
            kill <- timed("kill run")(Phases.killRun(
              lab,
              db,
              "kill",
              s.n,
              s.workers,
              s.limit,
              s.keys,
              s.kills,
              s.heartbeat,
              s.deadAfter
            ))
          yield Results(enq, worked, river, notify, poll, kill)
        }
        _ <- IO.println(table(s, results))
        _ <- s.json.traverse_(p => ExperimentIo.writeJson(p, json(s, results)))
      yield results
    }

  private def timed[A](phase: String)(io: IO[A]): IO[A] =
    io.timed.flatMap((t, a) => IO.println(f"  $phase: ${t.toMillis / 1e3}%.1f s").as(a))

  private def pct(xs: Vector[Double], p: Double): Double =
    if xs.isEmpty then Double.NaN
    else
      val sorted = xs.sorted
      sorted(((p * sorted.size).ceil.toInt - 1).max(0).min(sorted.size - 1))

  private def latency(xs: Vector[Double]): String = f"${pct(xs, 0.5)}%.2f / ${pct(xs, 0.99)}%.2f ms"

  private def meanMax(ms: Vector[Double]): String =
    if ms.isEmpty then "—" else f"${ms.sum / ms.size}%.0f / ${ms.max}%.0f ms"

  def table(s: Settings, r: Results): String =
    val k = r.killRun
    val rows = Vector(
      Vector("enqueue (batches of 10,000)", f"${r.enqueuePerSecond}%.0f tasks/s"),
      Vector(s"no-op tasks worked (${s.throughputWorkers} process(es))", f"${r.workedPerSecond}%.0f tasks/s"),
      Vector("River's benchmark, same server", r.riverPerSecond.fold(identity, d => f"$d%.0f jobs/s")),
      Vector(
        "weir / River",
        r.riverPerSecond.fold(_ => "—", d => f"${r.workedPerSecond / d}%.2f×")
      ),
      Vector("idle, NOTIFY: enqueue call→start p50 / p99", latency(r.idleNotify.map(_.fromCall))),
      Vector("idle, NOTIFY: enqueue commit→start p50 / p99", latency(r.idleNotify.map(_.fromCommit))),
      Vector("idle, poll 100 ms: enqueue commit→start p50 / p99", latency(r.idlePoll.map(_.fromCommit))),
      Vector(s"kill run: tasks worked (recording each)", f"${k.tasksPerSecond}%.0f tasks/s"),
      Vector(
        "kill run: enqueue→start under backlog p50 / p99",
        f"${k.backlogP50Ms}%.0f / ${k.backlogP99Ms}%.0f ms"
      ),
      Vector("kill run: workers killed", k.kills.size.toString),
      Vector(
        s"kill run: kill → tasks rescued, mean / max (heartbeat ${s.heartbeat.toMillis} ms, deadAfter ${s.deadAfter.toMillis} ms)",
        meanMax(k.rescueMillis)
      ),
      Vector("kill run: kill → first re-run of a task it held, mean / max", meanMax(k.rerunMillis)),
      Vector("kill run: lost tasks", k.lost.toString),
      Vector(
        "kill run: tasks run twice (all after a run on a killed worker?)",
        s"${k.duplicates} (${
            if k.unexplainedDuplicates == 0 then "yes" else s"no: ${k.unexplainedDuplicates}"
          })"
      ),
      Vector("kill run: keys out of order", k.keyViolations.toString)
    )
    "\n" + Table.grid(Vector("measure", "value") +: rows, rightAligned = Set(1))

  private def percentiles(xs: Vector[Double]): Json =
    Json.obj("p50" -> number(pct(xs, 0.5)), "p99" -> number(pct(xs, 0.99)))

  def json(s: Settings, r: Results): Json =
    val k = r.killRun
    Json.obj(
      "experiment" -> "durable".asJson,
      "environment" -> ExperimentIo.environment,
      "settings" -> Json.obj(
        "tasks" -> s.n.asJson,
        "workers" -> s.workers.asJson,
        "throughput_workers" -> s.throughputWorkers.asJson,
        "limit" -> s.limit.asJson,
        "keys" -> s.keys.asJson,
        "kill_every_ms" -> s.kills.map(_.toMillis).asJson,
        "heartbeat_ms" -> s.heartbeat.toMillis.asJson,
        "dead_after_ms" -> s.deadAfter.toMillis.asJson,
        "server" -> (if s.url.isEmpty then "embedded" else "url").asJson
      ),
      "records" -> Json.obj(
        "enqueue_per_s" -> number(r.enqueuePerSecond),
        "worked_per_s" -> number(r.workedPerSecond),
        "river_per_s" -> r.riverPerSecond.toOption.fold(Json.Null)(number),
        "river_status" -> r.riverPerSecond.fold(identity, _ => "ok").asJson,
        "idle_notify_from_call_ms" -> percentiles(r.idleNotify.map(_.fromCall)),
        "idle_notify_from_commit_ms" -> percentiles(r.idleNotify.map(_.fromCommit)),
        "idle_poll_from_commit_ms" -> percentiles(r.idlePoll.map(_.fromCommit)),
        "kill_run" -> Json.obj(
          "worked_per_s" -> number(k.tasksPerSecond),
          "backlog_start_ms" -> Json.obj("p50" -> number(k.backlogP50Ms), "p99" -> number(k.backlogP99Ms)),
          "kills" -> k.kills.size.asJson,
          "rescue_ms" -> k.rescueMillis.map(number).asJson,
          "rerun_ms" -> k.rerunMillis.map(number).asJson,
          "lost" -> k.lost.asJson,
          "executions" -> k.executions.asJson,
          "duplicates" -> k.duplicates.asJson,
          "unexplained_duplicates" -> k.unexplainedDuplicates.asJson,
          "key_violations" -> k.keyViolations.asJson
        ),
        "status" -> (if r.failures.isEmpty then "ok" else "failed").asJson,
        "failures" -> r.failures.asJson
      )
    )
