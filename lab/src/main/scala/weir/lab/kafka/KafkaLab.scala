package weir.lab.kafka

import cats.effect.{Deferred, ExitCode, IO, Resource}
import cats.syntax.all.*
import io.circe.Json
import io.circe.syntax.*
import scopt.OParser
import weir.cli.{CommandLine, Durations}
import weir.cli.CommandLine.positive
import weir.lab.Experiment
import weir.lab.report.ExperimentIo
import weir.lab.report.ExperimentIo.number

import java.nio.file.{Files, Path, Paths}
import scala.concurrent.duration.*

/**
 * `./weir lab kafka`: weir's Kafka source against the per-partition consumers, on one in-process KRaft broker
 * ([[LabBroker]]). Each approach runs alone in a consumer JVM of its own on a topic of `--partitions`
 * partitions holding `--keys` keys each, first with a no-op handler, then with a `--sleep` handler, and
 * its throughput is timed from its first record's start to its last record's finish (or to `--time-box`).
 * Then the kill run ([[KillPhase]]): `--consumers` JVMs of weir's source on one group, one SIGKILLed every
 * `--kill-every` and replaced, checked for lost records, key-order violations, unexplained duplicates and
 * the commit lag. The issue's targets are checked on the table; a lost record, an order violation or an
 * unexplained duplicate fails the run (exit code 1).
 */
object KafkaLab extends Experiment:
  val label = "kafka"
  val summary = "weir-kafka beside a plain consumer loop and per-partition FS2 streams; SIGKILLed consumers"

  final case class Settings(
      records: Int = 2000000,
      sleepRecords: Int = 60000,
      killRecords: Int = 30000,
      partitions: Int = 4,
      keys: Int = 100,
      consumers: Int = 3,
      killEvery: FiniteDuration = 5.seconds,
      maxKills: Int = Int.MaxValue,
      sleepMillis: Int = 10,
      limit: Int = 500,
      maxInFlight: Int = 5000,
      pollMillis: Int = 10,
      timeBox: FiniteDuration = 15.seconds,
      warmup: FiniteDuration = 15.seconds,
      rounds: Int = 3,
      quick: Boolean = false,
      json: Option[Path] = None
  ):
    def noopN: Int = if quick then records.min(40000) else records
    def sleepN: Int = if quick then sleepRecords.min(15000) else sleepRecords
    def killN: Int = if quick then killRecords.min(10000) else killRecords
    def box: FiniteDuration = if quick then timeBox.min(5.seconds) else timeBox
    def warm: FiniteDuration = if quick then warmup.min(2.seconds) else warmup
    def every: FiniteDuration = if quick then killEvery.min(4.seconds) else killEvery
    def kills: Int = if quick then maxKills.min(3) else maxKills
    def noopRounds: Int = if quick then 1 else rounds

  private val builder = OParser.builder[Settings]
  val parser: OParser[Unit, Settings] =
    import builder.*
    def positiveDuration(option: String) =
      Durations.opt(builder, option).validate(Durations.positive(s"--$option"))
    val d = Settings()
    OParser.sequence(
      programName("weir lab kafka"),
      head("weir-kafka beside a plain consumer loop and per-partition FS2 streams, and SIGKILLed consumers"),
      help("help").text("print this help"),
      opt[Int]("tasks").valueName("N").validate(positive("--tasks"))
        .action((n, s) => s.copy(records = n)).text(
          s"records of the no-op handler's topic (default ${d.records})"
        ),
      opt[Int]("sleep-tasks").valueName("N").validate(positive("--sleep-tasks"))
        .action((n, s) => s.copy(sleepRecords = n)).text(
          s"records of the sleeping handler's topic (default ${d.sleepRecords})"
        ),
      opt[Int]("kill-tasks").valueName("N").validate(positive("--kill-tasks"))
        .action((n, s) => s.copy(killRecords = n)).text(
          s"records of the kill run's topic (default ${d.killRecords})"
        ),
      opt[Int]("partitions").valueName("P").validate(positive("--partitions"))
        .action((n, s) => s.copy(partitions = n)).text("partitions of each topic (default 4)"),
      opt[Int]("keys").valueName("K").validate(positive("--keys"))
        .action((n, s) => s.copy(keys = n)).text("keys per partition (default 100)"),
      opt[Int]("consumers").valueName("C").validate(positive("--consumers"))
        .action((n, s) => s.copy(consumers = n)).text("consumer JVMs of the kill run (default 3)"),
      positiveDuration("kill-every")
        .action((t, s) => s.copy(killEvery = t))
        .text(
          s"SIGKILL one consumer of the kill run this often, and start another (default ${Durations.show(d.killEvery)})"
        ),
      opt[Int]("max-kills").valueName("N").validate(positive("--max-kills"))
        .action((n, s) => s.copy(maxKills = n)).text(
          "SIGKILLs of the kill run at most (default: until it ends)"
        ),
      positiveDuration("sleep").validate(Durations.wholeMillis("--sleep"))
        .action((t, s) => s.copy(sleepMillis = t.toMillis.toInt))
        .text(s"the sleeping handler's sleep (default ${Durations.show(d.sleepMillis.millis)})"),
      opt[Int]("limit").valueName("N").validate(positive("--limit"))
        .action((n, s) => s.copy(limit = n)).text(
          "weir's pipeline limit (default 500)"
        ),
      opt[Int]("max-in-flight").valueName("N").validate(positive("--max-in-flight"))
        .action((n, s) => s.copy(maxInFlight = n)).text("records weir's source holds at most (default 5000)"),
      positiveDuration("poll-timeout").validate(Durations.wholeMillis("--poll-timeout"))
        .action((t, s) => s.copy(pollMillis = t.toMillis.toInt))
        .text(s"every approach's poll timeout (default ${Durations.show(d.pollMillis.millis)})"),
      positiveDuration("time-box")
        .action((t, s) => s.copy(timeBox = t))
        .text(
          s"longest an approach is timed on a topic; slower ones are timed on what they did (default ${Durations.show(d.timeBox)})"
        ),
      Durations.opt(builder, "warmup")
        .action((t, s) => s.copy(warmup = t))
        .text(
          s"an untimed pass of each approach on the topic first, in its consumer JVM; 0s: none (default ${Durations.show(d.warmup)})"
        ),
      opt[Int]("rounds").valueName("R").validate(positive("--rounds"))
        .action((n, s) => s.copy(rounds = n)).text(
          s"rounds of the no-op comparison, the approaches alternated in each; its ratios are the medians of the rounds' (default ${d.rounds})"
        ),
      opt[Unit]("quick").action((_, s) => s.copy(quick = true))
        .text(
          "a smoke run: 40000, 15000 and 10000 records, a 2 s warm-up, a 5 s time box, 3 kills 4 s apart, one no-op round"
        ),
      opt[String]("json").valueName("FILE").action((f, s) => s.copy(json = Some(Paths.get(f))))
        .text("also write the results as JSON (default: none)"),
      checkConfig(s =>
        if s.keys * s.partitions > s.noopN.min(s.sleepN).min(s.killN) then
          failure(
            s"--keys × --partitions must not exceed the records of each topic (--tasks, --sleep-tasks, --kill-tasks), was: ${s.keys} × ${s.partitions}"
          )
        else success
      )
    )

  override def check(args: List[String]): Either[String, Unit] = CommandLine.check(parser, args, Settings())

  /** An approach's run on one handler, in one of its rounds (from 1): `records` processed in `seconds`. */
  final case class Throughput(
      handler: String,
      approach: Approach,
      records: Long,
      seconds: Double,
      round: Int = 1
  ):
    def perSecond: Double = records / seconds

  /** One of the issue's targets: what is asked, the figure that answers it, and whether it holds. */
  final case class Target(name: String, asked: String, value: Double, met: Boolean)

  final case class Results(throughputs: Vector[Throughput], kill: KillPhase.Outcome):
    /** The rate of `a` on `handler` in `round`. */
    def of(handler: String, a: Approach, round: Int = 1): Double =
      throughputs.find(t => t.handler == handler && t.approach == a && t.round == round).fold(Double.NaN)(
        _.perSecond
      )

    /**
     * weir's rate over `over`'s on `handler`: each round's ratio (the two run back to back in it), and their
     * median, so that one approach's run gone fast or slow moves one round, not the verdict.
     */
    def ratio(handler: String, over: Approach): Double =
      val rounds = throughputs.filter(_.handler == handler).map(_.round).distinct.sorted
      val ratios = rounds.map(r => of(handler, Approach.Weir, r) / of(handler, over, r)).sorted
      if ratios.isEmpty then Double.NaN
      else if ratios.size % 2 == 1 then ratios(ratios.size / 2)
      else (ratios(ratios.size / 2 - 1) + ratios(ratios.size / 2)) / 2

    def correct: Boolean =
      kill.analysis.lost == 0 && kill.analysis.orderViolations.isEmpty && kill.analysis.unexplained.isEmpty &&
        kill.analysis.committedEarly == 0

    def targets: Vector[Target] =
      val a = kill.analysis
      Vector(
        Target(
          "no-op: weir / plain loop",
          "≥ 1",
          ratio(Noop, Approach.Plain),
          ratio(Noop, Approach.Plain) >= 1
        ),
        Target(
          "no-op: weir / fs2 streams",
          "> 1",
          ratio(Noop, Approach.Streams),
          ratio(Noop, Approach.Streams) > 1
        ),
        Target(
          "sleep: weir / plain loop",
          "≥ 10",
          ratio(Sleep, Approach.Plain),
          ratio(Sleep, Approach.Plain) >= 10
        ),
        Target(
          "sleep: weir / fs2 streams",
          "≥ 10",
          ratio(Sleep, Approach.Streams),
          ratio(Sleep, Approach.Streams) >= 10
        ),
        Target("kill run: lost records", "0", a.lost.toDouble, a.lost == 0),
        Target(
          "kill run: key-order violations",
          "0",
          a.orderViolations.size.toDouble,
          a.orderViolations.isEmpty
        ),
        Target("kill run: unexplained duplicates", "0", a.unexplained.size.toDouble, a.unexplained.isEmpty),
        Target(
          "kill run: offsets committed before processing",
          "0",
          a.committedEarly.toDouble,
          a.committedEarly == 0
        )
      )

  val Noop = "no-op"
  val Sleep = "sleep"

  def run(args: List[String]): IO[ExitCode] =
    CommandLine.runWithCode(parser, args, Settings()) { s =>
      execute(s).attempt.flatMap {
        case Left(e) => IO.consoleForIO.errorln(s"weir lab kafka: ${e.getMessage}").as(ExitCode(1))
        case Right(r) => IO.pure(if r.correct then ExitCode.Success else ExitCode(1))
      }
    }

  private val order = Vector(Approach.Plain, Approach.Streams, Approach.Weir)

  def execute(s: Settings): IO[Results] =
    val scratch = Resource.make(IO.blocking(Files.createTempDirectory("weir-lab-kafka")))(d =>
      IO.blocking(Files.list(d).toList.forEach(f => Files.deleteIfExists(f): Unit)) *>
        IO.blocking(Files.deleteIfExists(d)).void
    )
    (LabBroker.resource, scratch).tupled.use { (broker, dir) =>
      val stamp = System.currentTimeMillis
      for
        _ <- IO.println(
          s"weir lab kafka — in-process KRaft broker at ${broker.bootstrap}; ${s.partitions} partitions × " +
            s"${s.keys} keys; poll timeout ${s.pollMillis} ms; weir: limit ${s.limit}, maxInFlight ${s.maxInFlight}; " +
            s"warm-up ${s.warm.toSeconds} s, time box ${s.box.toSeconds} s"
        )
        topics <- List(("noop", s.noopN), ("sleep", s.sleepN), ("kill", s.killN)).traverse((what, n) =>
          broker.topic(s"lab-$what-$stamp", s.partitions).flatTap(t =>
            broker.fill(t, n, s.partitions, s.keys)
          )
        )
        _ <- IO.println(
          s"  filled: ${s.noopN} no-op records, ${s.sleepN} for the ${s.sleepMillis} ms handler, ${s.killN} for the kill run"
        )
        noop <- (1 to s.noopRounds).toVector.flatTraverse(round =>
          order.traverse(a => throughput(broker, s, a, Noop, topics(0), 0, s.noopN, stamp, round))
        )
        sleep <-
          order.traverse(a => throughput(broker, s, a, Sleep, topics(1), s.sleepMillis, s.sleepN, stamp, 1))
        _ <- IO.println(
          s"  the kill run: ${s.consumers} consumer JVMs of weir, one SIGKILLed every ${s.every.toMillis /
              1000.0} s" +
            (if s.kills < Int.MaxValue then s", ${s.kills} times at most" else "")
        )
        kill <- KillPhase.run(
          broker,
          topics(2),
          s.partitions,
          s.consumers,
          s.every,
          s.kills,
          ConsumerSettings(
            bootstrap = broker.bootstrap,
            topic = topics(2),
            group = s"lab-kill-$stamp",
            sleepMillis = s.sleepMillis,
            limit = s.limit,
            maxInFlight = s.maxInFlight,
            pollMillis = s.pollMillis
          ),
          deadline = 5.minutes,
          dir
        )
        results = Results(noop ++ sleep, kill)
        _ <- IO.println(table(s, results))
        _ <- s.json.traverse_(p => ExperimentIo.writeJson(p, json(s, results)))
      yield results
    }

  /**
   * One approach alone on `topic` from its start, in a consumer JVM of its own and a group of its own (one per
   * round).
   */
  private def throughput(
      broker: LabBroker,
      s: Settings,
      a: Approach,
      handler: String,
      topic: String,
      sleepMillis: Int,
      n: Int,
      stamp: Long,
      round: Int
  ): IO[Throughput] =
    Deferred[IO, (Long, Long)].flatMap { result =>
      val settings =
        ConsumerSettings(
          bootstrap = broker.bootstrap,
          topic = topic,
          group = s"lab-${a.name}-$handler-$stamp-$round",
          sleepMillis = sleepMillis,
          limit = s.limit,
          maxInFlight = s.maxInFlight,
          pollMillis = s.pollMillis
        )
      val onLine = (line: String) =>
        line.split(' ') match
          case Array("result", records, micros) => result.complete((records.toLong, micros.toLong)).void
          case _ => IO.unit
      ConsumerJvm.start(0, a, settings, n.toLong, s.box.toMillis, s.warm.toMillis, None, onLine).use(_ =>
        result.get.timeoutTo(
          s.warm + s.box + 2.minutes,
          IO.raiseError(new IllegalStateException(s"${a.label} on the $handler topic gave no result"))
        )
      ).map((records, micros) => Throughput(handler, a, records, micros / 1e6, round))
        .flatTap(t =>
          IO.println(
            f"  $handler%-6s ${a.label}%-75s ${t.records}%8d in ${t.seconds}%6.2f s: ${t.perSecond}%,10.0f/s" +
              (if handler == Noop && s.noopRounds > 1 then s" (round $round)" else "")
          )
        )
    }

  def table(s: Settings, r: Results): String =
    val a = r.kill.analysis
    val rows = r.throughputs.map { t =>
      val plain = r.of(t.handler, Approach.Plain, t.round)
      val streams = r.of(t.handler, Approach.Streams, t.round)
      val handler = if t.handler == Noop then "no-op" else s"${s.sleepMillis} ms"
      f"  $handler%-7s ${t.round}%5d ${t.approach.label}%-75s ${t.records}%9d ${t.seconds}%8.2f ${t.perSecond}%,11.0f ${t.perSecond /
          plain}%8.2f ${t.perSecond / streams}%8.2f"
    }
    val header =
      f"  ${"handler"}%-7s ${"round"}%5s ${"approach"}%-75s ${"records"}%9s ${"seconds"}%8s ${"records/s"}%11s ${"÷ plain"}%8s ${"÷ fs2"}%8s"
    val kill = Vector(
      f"  kill run (weir, ${s.consumers} consumers, ${s.sleepMillis} ms handler): ${a.records}%d records in ${r.kill.seconds}%.1f s (${r.kill.perSecond}%,.0f/s), " +
        s"${r.kill.kills} SIGKILLs, ${r.kill.consumersStarted} consumer JVMs started",
      s"    lost ${a.lost}, key-order violations ${a.orderViolations.size}, duplicates ${a.duplicates} " +
        s"(${a.afterKill} after a kill, ${a.afterRevoke} after a revoke, ${a.unexplained.size} unexplained), " +
        s"committed before processing ${a.committedEarly}",
      f"    commit lag (a record's first finish to its offset committed): p50 ${a.lagPercentile(50)}%.0f ms, " +
        f"p99 ${a.lagPercentile(99)}%.0f ms, max ${a.lagPercentile(100)}%.0f ms"
    ) ++ a.orderViolations.take(5).map("    order: " + _) ++
      a.unexplained.take(5).map("    unexplained: " + _)
    val targets = s"  targets (no-op ratios: the median of ${s.noopRounds} round(s)' ratios):" +:
      r.targets.map(t =>
        f"    ${t.name}%-48s asked ${t.asked}%-4s got ${t.value}%10.2f  ${if t.met then "met" else "NOT MET"}"
      )
    ((header +: rows) ++ kill ++ targets).mkString("\n")

  def json(s: Settings, r: Results): Json =
    val a = r.kill.analysis
    Json.obj(
      "experiment" -> "kafka".asJson,
      "environment" -> ExperimentIo.environment,
      "partitions" -> s.partitions.asJson,
      "keys_per_partition" -> s.keys.asJson,
      "sleep_ms" -> s.sleepMillis.asJson,
      "limit" -> s.limit.asJson,
      "max_in_flight" -> s.maxInFlight.asJson,
      "poll_timeout_ms" -> s.pollMillis.asJson,
      "time_box_s" -> number(s.box.toMillis / 1000.0),
      "warmup_s" -> number(s.warm.toMillis / 1000.0),
      "noop_rounds" -> s.noopRounds.asJson,
      "throughput" -> r.throughputs.map(t =>
        Json.obj(
          "handler" -> t.handler.asJson,
          "approach" -> t.approach.name.asJson,
          "round" -> t.round.asJson,
          "label" -> t.approach.label.asJson,
          "records" -> t.records.asJson,
          "seconds" -> number(t.seconds),
          "per_second" -> number(t.perSecond)
        )
      ).asJson,
      "kill" -> Json.obj(
        "consumers" -> s.consumers.asJson,
        "kill_every_s" -> number(s.every.toMillis / 1000.0),
        "kills" -> r.kill.kills.asJson,
        "consumers_started" -> r.kill.consumersStarted.asJson,
        "records" -> a.records.asJson,
        "seconds" -> number(r.kill.seconds),
        "per_second" -> number(r.kill.perSecond),
        "lost" -> a.lost.asJson,
        "order_violations" -> a.orderViolations.size.asJson,
        "runs" -> a.runs.asJson,
        "duplicates" -> a.duplicates.asJson,
        "duplicates_after_kill" -> a.afterKill.asJson,
        "duplicates_after_revoke" -> a.afterRevoke.asJson,
        "duplicates_unexplained" -> a.unexplained.size.asJson,
        "committed_before_processing" -> a.committedEarly.asJson,
        "commit_lag_p50_ms" -> number(a.lagPercentile(50)),
        "commit_lag_p99_ms" -> number(a.lagPercentile(99)),
        "commit_lag_max_ms" -> number(a.lagPercentile(100))
      ),
      "targets" -> r.targets.map(t =>
        Json.obj(
          "name" -> t.name.asJson,
          "asked" -> t.asked.asJson,
          "value" -> number(t.value),
          "met" -> t.met.asJson
        )
      ).asJson
    )
