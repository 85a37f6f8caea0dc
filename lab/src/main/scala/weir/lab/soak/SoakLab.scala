package weir.lab.soak

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import io.circe.Json
import io.circe.syntax.*
import scopt.OParser
import weir.cli.{CommandLine, Durations}
import weir.cli.CommandLine.positive
import weir.lab.Experiment
import weir.lab.durable.LabDatabase
import weir.lab.kafka.LabBroker
import weir.lab.report.ExperimentIo
import weir.lab.report.ExperimentIo.number
import weir.postgres.*

import java.nio.file.{Path, Paths}
import scala.concurrent.duration.*

/**
 * `./weir lab soak`: weir inside a service that runs for a long time. A [[SoakService]] JVM runs a
 * [[DurableWorker]] on PostgreSQL (embedded, or `--url`) and a `KafkaSource` on an in-process KRaft broker
 * ([[LabBroker]]); this JVM feeds each at `--rate` tasks a second for `--duration`, keyed over `--keys`
 * rotating keys, with a tenth of the tasks failing ([[SoakTask]]: retried, dead, dead-lettered) and
 * snoozes and cancels mixed in. The service collects its whole heap every `--sample-every` seconds and
 * reports what is left; the run then lets both sources finish what was fed and counts every task's end.
 *
 * The figures: `tasks` fed, `failures` (failed attempts), the heap after each full collection, its growth
 * over the run's last half ([[HeapSeries.growth]]), and `lost`: durable tasks not completed, dead or
 * cancelled, plus Kafka records neither handled nor dead-lettered. A lost task fails the run (exit 1); so
 * does a full run whose heap grew more than 8 MiB over its last half.
 */
object SoakLab extends Experiment:
  val label = "soak"
  val summary =
    "a DurableWorker and a KafkaSource fed for minutes: heap after each full GC, every task counted"

  final case class Settings(
      duration: FiniteDuration = 10.minutes,
      rate: Int = 2000,
      keys: Int = 100000,
      sampleEvery: FiniteDuration = 5.seconds,
      heapMiB: Int = 512,
      url: Option[String] = None,
      quick: Boolean = false,
      json: Option[Path] = None
  ):
    def feed: FiniteDuration = if quick then duration.min(30.seconds) else duration
    def perSecond: Int = if quick then rate.min(500) else rate
    def every: FiniteDuration = if quick then sampleEvery.min(2.seconds) else sampleEvery

  /** The most a full run's heap may grow over its last half, in MiB. */
  val growthBound: Double = 8

  private val builder = OParser.builder[Settings]
  val parser: OParser[Unit, Settings] =
    import builder.*
    val d = Settings()
    OParser.sequence(
      programName("weir lab soak"),
      head("a DurableWorker and a KafkaSource fed at a steady rate; the heap after each full collection"),
      help("help").text("print this help"),
      Durations.opt(builder, "duration").validate(Durations.positive("--duration"))
        .action((t, s) => s.copy(duration = t))
        .text(
          s"how long each source is fed (default ${Durations.show(d.duration)}; at most 30s with --quick)"
        ),
      opt[Int]("rate").valueName("R").validate(positive("--rate"))
        .action((n, s) => s.copy(rate = n)).text(s"tasks a second fed to each source (default ${d.rate})"),
      opt[Int]("keys").valueName("K").validate(positive("--keys"))
        .action((n, s) => s.copy(keys = n)).text(s"distinct keys, in rotation (default ${d.keys})"),
      Durations.opt(builder, "sample-every").validate(Durations.positive("--sample-every"))
        .validate(Durations.wholeMillis("--sample-every"))
        .action((t, s) => s.copy(sampleEvery = t)).text(
          s"a full collection and a heap sample this often (default ${Durations.show(d.sampleEvery)}; at most 2s with --quick)"
        ),
      opt[Int]("heap").valueName("MIB").validate(positive("--heap"))
        .action((n, s) => s.copy(heapMiB = n)).text("the service JVM's maximum heap (default 512)"),
      opt[String]("url").valueName("URL").action((u, s) => s.copy(url = Some(u)))
        .text("a PostgreSQL server to use (default: $WEIR_DATABASE_URL, else an embedded one)"),
      opt[Unit]("quick").action((_, s) => s.copy(quick = true))
        .text("a smoke run: 30 s at 500 tasks a second per source, a sample every 2 s"),
      opt[String]("json").valueName("FILE").action((f, s) => s.copy(json = Some(Paths.get(f))))
        .text("also write the results as JSON (default: none)")
    )

  override def check(args: List[String]): Either[String, Unit] = CommandLine.check(parser, args, Settings())

  /** What a run counted. */
  final case class Results(
      settings: Settings,
      enqueued: Long,
      produced: Long,
      queue: QueueStats,
      service: Map[String, Long],
      heap: HeapSeries,
      feedSeconds: Double
  ):
    def kafkaFinished: Long = service.getOrElse("kafka_succeeded", 0L) +
      service.getOrElse("dead_lettered", 0L)
    def durableLost: Long = enqueued - (queue.completed + queue.dead + queue.cancelled)
    def kafkaLost: Long = math.max(0L, produced - kafkaFinished)
    def kafkaDuplicates: Long = math.max(0L, kafkaFinished - produced)
    def lost: Long = durableLost + kafkaLost
    def tasks: Long = enqueued + produced
    def failures: Long = service.getOrElse("durable_failures", 0L) + service.getOrElse("kafka_failures", 0L)
    def growth: Double = heap.growth(feedSeconds)
    def growthHolds: Boolean = settings.quick || growth <= growthBound

  def run(args: List[String]): IO[ExitCode] =
    CommandLine.runWithCode(parser, args, Settings()) { s =>
      execute(s).attempt.flatMap {
        case Left(e) => IO.consoleForIO.errorln(s"weir lab soak: ${e.getMessage}").as(ExitCode(1))
        case Right(r) =>
          report(r) *> s.json.traverse_(f => ExperimentIo.writeJson(f, json(r))) *>
            IO.pure(if r.lost == 0 && r.growthHolds then ExitCode.Success else ExitCode(1))
      }
    }

  private val queueName = "soak"

  def execute(s: Settings): IO[Results] =
    val url = s.url.orElse(sys.env.get("WEIR_DATABASE_URL").filter(_.nonEmpty))
    (LabDatabase.resource(url, "lab_soak"), LabBroker.resource).tupled.use { (lab, broker) =>
      val stamp = System.currentTimeMillis
      val topic = s"soak-$stamp"
      val deadLetters = s"soak-dead-$stamp"
      val group = s"soak-$stamp"
      val config = lab.config(poolSize = 4)
      for
        _ <- Database.migrate[IO](config)
        _ <- broker.topic(topic, 4)
        _ <- broker.topic(deadLetters, 1)
        args = List(
          lab.url,
          lab.schema.name,
          queueName,
          broker.bootstrap,
          topic,
          deadLetters,
          group,
          s.every.toMillis.toString
        )
        _ <- IO.println(
          s"soak: feeding a DurableWorker and a KafkaSource ${s.perSecond} tasks/s each for ${s.feed.toSeconds} s, " +
            s"${s.keys} keys, a heap sample every ${s.every.toMillis / 1000.0} s (PostgreSQL: ${
                if lab.embedded then "embedded" else "--url"
              })"
        )
        results <- Database.connect[IO](config).use { db =>
          val queue = TaskQueue[IO, Long](db, queueName)
          val admin = TaskAdmin[IO](db)
          ServiceJvm.start(s.heapMiB, args).use { service =>
            for
              _ <- service.ready(2.minutes)
              fed <- (
                Feed.durable(queue, admin, s.perSecond, s.keys, s.feed),
                Feed.kafka(broker, topic, s.perSecond, s.keys, s.feed)
              ).parTupled
              (enqueued, produced) = fed
              heap <- service.heap
              _ <- IO.println(s"soak: fed $enqueued durable tasks and $produced records; letting both finish")
              _ <- settle(admin, broker, topic, group)
              counts <- service.stop(2.minutes)
              queueStats <- admin.overview.stats.map(_.find(_.queue == queueName))
            yield Results(
              s,
              enqueued,
              produced,
              queueStats.getOrElse(QueueStats(queueName, 0, 0, 0, 0, 0, 0)),
              counts,
              heap.during(s.feed.toMillis / 1000.0),
              s.feed.toMillis / 1000.0
            )
          }
        }
      yield results
    }

  /** Waits until the queue has no unfinished task and the group has committed every record, or 3 minutes. */
  private def settle(admin: TaskAdmin[IO], broker: LabBroker, topic: String, group: String): IO[Unit] =
    val settled =
      for
        stats <- admin.overview.stats.map(_.find(_.queue == queueName))
        unfinished = stats.fold(0L)(q => q.available + q.scheduled + q.running)
        ends <- broker.ends(topic, 4)
        committed <- broker.committed(group)
      yield unfinished == 0 && ends.forall((p, end) => committed.getOrElse(p, 0L) == end)
    (IO.sleep(1.second) *> settled).iterateUntil(identity).timeoutTo(
      3.minutes,
      IO.println("soak: the sources had not finished everything 3 minutes after the feed ended")
    ).void

  private def report(r: Results): IO[Unit] =
    val q = r.queue
    val k = r.service
    IO.println(
      s"""|
          |weir lab soak: ${r.tasks} tasks in ${r.feedSeconds} s (${r.settings.perSecond}/s per source, ${r.settings.keys} keys)
          |  durable:  enqueued ${r.enqueued}, completed ${q.completed}, dead ${q.dead}, cancelled ${q.cancelled}, snoozes ${k
          .getOrElse(
            "snoozed",
            0L
          )}, failed attempts ${k.getOrElse("durable_failures", 0L)}, lost ${r.durableLost}
          |  kafka:    produced ${r.produced}, handled ${k.getOrElse(
          "kafka_succeeded",
          0L
        )}, dead-lettered ${k
          .getOrElse("dead_lettered", 0L)}, failed attempts ${k.getOrElse(
          "kafka_failures",
          0L
        )}, lost ${r.kafkaLost}, duplicates ${r.kafkaDuplicates}
          |  heap after a full GC: ${r.heap.samples.size} samples, ${f"${r.heap.min}%.1f"} to ${f"${r.heap.max}%.1f"} MiB; growth over the last half ${f"${r.growth}%.2f"} MiB${
          if r.settings.quick then " (a quick run: not checked)" else s" (at most $growthBound)"
        }
          |  tasks ${r.tasks}, failures ${r.failures}, lost ${r.lost}
          |""".stripMargin
    )

  def json(r: Results): Json =
    Json.obj(
      "experiment" -> "soak".asJson,
      "quick" -> r.settings.quick.asJson,
      "feed_seconds" -> r.feedSeconds.asJson,
      "rate_per_source" -> r.settings.perSecond.asJson,
      "keys" -> r.settings.keys.asJson,
      "tasks" -> r.tasks.asJson,
      "failures" -> r.failures.asJson,
      "heap_after_gc_mib" -> r.heap.samples.map((t, m) => Json.arr(number(t), number(m))).asJson,
      "heap_growth_mib" -> number(r.growth),
      "lost" -> r.lost.asJson,
      "durable" -> Json.obj(
        "enqueued" -> r.enqueued.asJson,
        "completed" -> r.queue.completed.asJson,
        "dead" -> r.queue.dead.asJson,
        "cancelled" -> r.queue.cancelled.asJson,
        "snoozes" -> r.service.getOrElse("snoozed", 0L).asJson,
        "failed_attempts" -> r.service.getOrElse("durable_failures", 0L).asJson,
        "lost" -> r.durableLost.asJson
      ),
      "kafka" -> Json.obj(
        "produced" -> r.produced.asJson,
        "handled" -> r.service.getOrElse("kafka_succeeded", 0L).asJson,
        "dead_lettered" -> r.service.getOrElse("dead_lettered", 0L).asJson,
        "failed_attempts" -> r.service.getOrElse("kafka_failures", 0L).asJson,
        "lost" -> r.kafkaLost.asJson,
        "duplicates" -> r.kafkaDuplicates.asJson
      ),
      "environment" -> ExperimentIo.environment
    )
