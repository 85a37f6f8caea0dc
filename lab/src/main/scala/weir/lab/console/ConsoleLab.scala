package weir.lab.console

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import com.comcast.ip4s.{Host, Port}
import doobie.*
import doobie.implicits.*
import io.circe.Json
import io.circe.syntax.*
import scopt.OParser
import weir.Pipeline
import weir.cli.{CommandLine, Durations}
import weir.cli.CommandLine.positive
import weir.console.{ConsoleOptions, WeirConsole}
import weir.lab.Experiment
import weir.lab.durable.LabDatabase
import weir.lab.report.ExperimentIo
import weir.postgres.{Database, DurableWorker, WorkerConfig}

import java.net.URLEncoder
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.{Path, Paths}
import java.time.temporal.ChronoUnit
import scala.concurrent.duration.*

/**
 * `./weir lab console`: how fast the console answers on big tables. It fills a schema with a history of
 * `--finished` tasks and a backlog of `--available` live ones ([[ConsoleSeed]]), serves the console over
 * HTTP with one worker registered, logs in, requests every page once untimed, then times every page (with
 * each filter of the task list) and every action, `--samples` times each, one request at a time: p50, p95 and the slowest, against the
 * target `--target` at p95. A request answered with another status than the one expected fails the run
 * (a fast error is no measurement).
 */
object ConsoleLab extends Experiment:
  val label = "console"
  val summary = "weir console: every page and action timed on a big history and backlog (p50, p95)"

  final case class Settings(
      url: Option[String] = sys.env.get("WEIR_DATABASE_URL").filter(_.nonEmpty),
      finished: Long = 1000000L,
      available: Int = 100000,
      samples: Int = 50,
      targetMillis: Double = 100,
      quick: Boolean = false,
      rewritten: Boolean = false,
      json: Option[Path] = None
  ):
    def history: Long = if quick then finished.min(20000L) else finished
    def backlog: Int = if quick then available.min(2000) else available
    def n: Int = if quick then samples.min(5) else samples

  private val builder = OParser.builder[Settings]
  val parser: OParser[Unit, Settings] =
    import builder.*
    OParser.sequence(
      programName("weir lab console"),
      head("weir console on big tables: every page and action timed"),
      help("help").text("print this help"),
      opt[String]("url").valueName("URL").action((u, s) => s.copy(url = Some(u)))
        .text(
          "a PostgreSQL server (default: $WEIR_DATABASE_URL, else an embedded server started for the run)"
        ),
      opt[Long]("finished").valueName("N").validate(positive("--finished"))
        .action((n, s) => s.copy(finished = n)).text("finished tasks in the history (default 1000000)"),
      opt[Int]("available").valueName("N").validate(positive("--available"))
        .action((n, s) => s.copy(available = n)).text("live tasks in the backlog (default 100000)"),
      opt[Int]("samples").valueName("N").validate(positive("--samples"))
        .action((n, s) => s.copy(samples = n)).text("timed requests per page or action (default 50)"),
      Durations.opt(builder, "target").validate(Durations.positive("--target"))
        .action((t, s) => s.copy(targetMillis = t.toNanos / 1e6)).text(
          s"the p95 each page and action should stay under (default ${Durations.show(Settings().targetMillis.round.millis)})"
        ),
      opt[Unit]("quick").action((_, s) => s.copy(quick = true))
        .text("a smoke run: 20000 finished, 2000 available, 5 samples"),
      opt[Unit]("rewritten-backlog").action((_, s) => s.copy(rewritten = true))
        .text(
          "rewrite every live task once after the vacuum, and keep autovacuum off it: the visibility map " +
            "as a busy table has it between vacuums"
        ),
      opt[String]("json").valueName("FILE").action((f, s) => s.copy(json = Some(Paths.get(f))))
        .text("also write the results as JSON (default: none)")
    )

  override def check(args: List[String]): Either[String, Unit] = CommandLine.check(parser, args, Settings())

  /**
   * One page or action's timings, in milliseconds; a reference is shown beside the others and not held to
   * the target.
   */
  final case class Timing(name: String, action: Boolean, millis: Vector[Double], reference: Boolean = false):
    private val sorted = millis.sorted

    /** The nearest-rank percentile `p` (0 < p ≤ 100). */
    def percentile(p: Double): Double = sorted(math.ceil(p / 100 * sorted.size).toInt.max(1) - 1)
    def p50: Double = percentile(50)
    def p95: Double = percentile(95)
    def max: Double = sorted.last

  final case class Results(history: Long, backlog: Int, seedSeconds: Double, timings: Vector[Timing])

  def run(args: List[String]): IO[ExitCode] =
    CommandLine.runWithCode(parser, args, Settings()) { s =>
      execute(s).attempt.flatMap {
        case Left(e) => IO.consoleForIO.errorln(s"weir lab console: ${e.getMessage}").as(ExitCode(1))
        case Right(_) => IO.pure(ExitCode.Success)
      }
    }

  private val token = "console-lab-token"

  def execute(s: Settings): IO[Results] =
    LabDatabase.resource(s.url, experiment = "lab_console").use { lab =>
      for
        _ <- IO.println(
          s"weir lab console — ${
              if lab.embedded then "embedded PostgreSQL"
              else "server " + weir.postgres.DatabaseConfig(lab.url).redactedUrl
            }, " +
            f"schema ${lab.schema}, ${s.history}%,d finished and ${s.backlog}%,d live tasks" +
            (if s.rewritten then " (rewritten since their vacuum)" else "") + s", ${s.n} samples each"
        )
        _ <- Database.migrate[IO](lab.config())
        results <- Database.connect[IO](lab.config()).use { db =>
          for
            seeding <-
            (ConsoleSeed.history(lab, s.history) *> ConsoleSeed.backlog(lab, db, s.backlog) *>
              ConsoleSeed.settle(lab) *> ConsoleSeed.rewrite(lab).whenA(s.rewritten)).timed.map(_._1)
            _ <- IO.println(f"  seeded in ${seeding.toMillis / 1e3}%.1f s")
            timings <- (
              DurableWorker.start[IO, Map[String, String], Unit](db, WorkerConfig(queue = "idle"))(
                Pipeline(_).process(_ => IO.unit)
              ),
              WeirConsole.server(
                db,
                ConsoleOptions(adminToken = Some(token)),
                Host.fromString("127.0.0.1").get,
                Port.fromInt(0).get
              ),
              // the reference: a console whose overview reads the counts for each request
              WeirConsole.server(
                db,
                ConsoleOptions(countsEvery = Duration.Zero),
                Host.fromString("127.0.0.1").get,
                Port.fromInt(0).get
              )
            ).tupled.use((_, server, unshared) =>
              measure(lab, s, s"http://${server.addressIp4s}/", s"http://${unshared.addressIp4s}/")
            )
          yield Results(s.history, s.backlog, seeding.toMillis / 1e3, timings)
        }
        _ <- IO.println(table(s, results))
        _ <- s.json.traverse_(p => ExperimentIo.writeJson(p, json(s, results)))
        slow = results.timings.filter(t => !t.reference && t.p95 > s.targetMillis)
        _ <- IO.println(
          if slow.isEmpty then f"every page and action under ${s.targetMillis}%.0f ms at p95"
          else s"over the target at p95: ${slow.map(_.name).mkString(", ")}"
        )
      yield results
    }

  private def measure(lab: LabDatabase, s: Settings, base: String, unshared: String): IO[Vector[Timing]] =
    ConsoleProbe.login(base, token).use(probe => measure(lab, s, probe, unshared))

  private def measure(
      lab: LabDatabase,
      s: Settings,
      probe: ConsoleProbe,
      unshared: String
  ): IO[Vector[Timing]] =
    val finished = lab.schema("finished")
    val tasks = lab.schema("tasks")
    val n = s.n
    val warmup = 2
    // every action sample acts on a task of its own: retried, discarded or cancelled tasks are gone
    val perAction = n + warmup
    for
      dead <- Fragment.const(
        s"SELECT id FROM $finished WHERE state = 'dead' ORDER BY id DESC LIMIT ${perAction * 22}"
      )
        .query[Long].to[Vector].transact(lab.admin)
      live <- Fragment.const(
        s"SELECT id FROM $tasks WHERE state = 'available' AND ordering_key IS NULL ORDER BY id LIMIT $perAction"
      ).query[Long].to[Vector].transact(lab.admin)
      keyed <- Fragment.const(s"SELECT id FROM $tasks WHERE ordering_key = 'k42' ORDER BY id DESC LIMIT 1")
        .query[Long].unique.transact(lab.admin)
      _ <- IO.raiseWhen(dead.size < perAction * 22 || live.size < perAction)(new IllegalStateException(
        s"too few tasks to act on: ${dead.size} dead, ${live.size} available; give more --finished or --available, or fewer --samples"
      ))
      now <- IO.realTimeInstant
      day3 = now.minus(3, ChronoUnit.DAYS).truncatedTo(ChronoUnit.SECONDS)
      retried = dead.take(perAction)
      discarded = dead.slice(perAction, 2 * perAction)
      batches = dead.drop(2 * perAction).grouped(20).toVector
      pages = Vector(
        "overview" -> "",
        "overview's queues (refresh)" -> "fragments/queues",
        "chart, all queues" -> "api/throughput",
        "chart, one queue" -> "api/throughput?queue=emails",
        "queue" -> "queues/emails",
        "tasks" -> "tasks",
        "tasks, a page in the middle" -> s"tasks?after=${s.history / 2}",
        "tasks, dead" -> "tasks?state=dead",
        "tasks, one queue's completed" -> "tasks?queue=invoices&state=completed",
        "tasks, one queue" -> "tasks?queue=reports",
        "tasks, one queue's available" -> "tasks?queue=emails&state=available",
        "tasks, one queue's available, oldest first" -> "tasks?queue=emails&state=available&first=oldest",
        "tasks, dead, oldest first" -> "tasks?state=dead&first=oldest",
        "tasks, one key" -> "tasks?key=k42",
        "tasks, one priority" -> "tasks?priority=2",
        "tasks, an hour 3 days ago" ->
          s"tasks?from=${encode(day3.toString)}&to=${encode(day3.plusSeconds(3600).toString)}",
        "tasks, text in the payload" -> s"tasks?text=${encode("\"c4999\"")}",
        "tasks, by finish time" -> "tasks?sort=finished",
        "task, dead with errors" -> s"tasks/${dead.head}",
        "task, live with a key" -> s"tasks/$keyed",
        "keys" -> "keys",
        "workers" -> "workers",
        "schedules" -> "schedules"
      )
      // one untimed round over every page first, as a console that has been open a while has had: the
      // first page timed would otherwise also pay for the server's and the JIT's first requests
      _ <- pages.traverse_((name, path) => timed(name, action = false, 0, 1, 200)(_ => probe.get(path)))
      pageTimings <-
        pages.traverse((name, path) => timed(name, action = false, n, warmup, 200)(_ => probe.get(path)))
      reference <- ConsoleProbe.reader(unshared).use(reader =>
        timed("overview, counts read for each request", action = false, n, warmup, 200)(_ => reader.get(""))
      ).map(_.copy(reference = true))
      actions = Vector[(String, Int => IO[(Int, Double)])](
        "pause" -> (_ => probe.post("queues/webhooks/pause", Nil)),
        "resume" -> (_ => probe.post("queues/webhooks/resume", Nil)),
        "limits" ->
          (i =>
            probe.post(
              "queues/webhooks/limit",
              Seq("max_running" -> s"${10 + i}", "rate" -> "50", "burst" -> "10")
            )
          ),
        "retry a dead task" -> (i => probe.post(s"tasks/${retried(i)}/retry", Nil)),
        "discard a dead task" -> (i => probe.post(s"tasks/${discarded(i)}/discard", Nil)),
        "cancel an available task" -> (i => probe.post(s"tasks/${live(i)}/cancel", Nil)),
        "retry 20 selected tasks" ->
          (i =>
            probe.post("tasks/actions", ("action" -> "retry") +: batches(i).map(id => "id" -> id.toString))
          )
      )
      actionTimings <- actions.traverse((name, act) =>
        timed(name, action = true, n, warmup, if name.startsWith("retry 20") then 200 else 303)(act)
      )
    yield pageTimings ++ actionTimings :+ reference

  private def encode(s: String): String = URLEncoder.encode(s, UTF_8)

  /** `warmup` untimed requests, then `n` timed ones; each must answer `expected`. */
  private def timed(name: String, action: Boolean, n: Int, warmup: Int, expected: Int)(
      request: Int => IO[(Int, Double)]
  ): IO[Timing] = (0 until warmup + n).toVector.traverse { i =>
    request(i).flatMap { (status, ms) =>
      IO.raiseWhen(status != expected)(
        new IllegalStateException(s"$name answered $status, not $expected")
      ).as(ms)
    }
  }.map(ms => Timing(name, action, ms.drop(warmup)))

  def table(s: Settings, r: Results): String =
    val width = r.timings.map(_.name.length).max
    val rows = r.timings.map(t =>
      f"  ${t.name.padTo(width, ' ')}  ${t.p50}%8.1f  ${t.p95}%8.1f  ${t.max}%8.1f${
          if t.reference then "  reference" else if t.p95 > s.targetMillis then "  over" else ""
        }"
    )
    (f"  ${"page or action".padTo(width, ' ')}  ${"p50 ms"}%8s  ${"p95 ms"}%8s  ${"max ms"}%8s" +:
      rows).mkString("\n")

  def json(s: Settings, r: Results): Json =
    Json.obj(
      "experiment" -> "console".asJson,
      "environment" -> ExperimentIo.environment,
      "finished" -> r.history.asJson,
      "available" -> r.backlog.asJson,
      "rewritten_backlog" -> s.rewritten.asJson,
      "samples" -> s.n.asJson,
      "target_p95_ms" -> s.targetMillis.asJson,
      "seed_seconds" -> ExperimentIo.number(r.seedSeconds),
      "timings" -> r.timings.map(t =>
        Json.obj(
          "name" -> t.name.asJson,
          "action" -> t.action.asJson,
          "reference" -> t.reference.asJson,
          "p50_ms" -> ExperimentIo.number(t.p50),
          "p95_ms" -> ExperimentIo.number(t.p95),
          "max_ms" -> ExperimentIo.number(t.max)
        )
      ).asJson
    )
