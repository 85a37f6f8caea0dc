package weir.lab.soak

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import org.apache.kafka.common.serialization.StringDeserializer
import weir.{Disposition, Limit, Pipeline, Retry, TaskOutcome}
import weir.kafka.{KafkaSettings, KafkaSource}
import weir.postgres.*
import weir.runtime.WeirApp

import java.lang.management.ManagementFactory
import java.time.Instant
import java.util.concurrent.ThreadLocalRandom
import java.util.concurrent.atomic.LongAdder
import scala.concurrent.duration.*

/**
 * The service of `./weir lab soak`, started by the lab as a child JVM: what a user runs for weeks, a
 * [[DurableWorker]] and a [[KafkaSource]] in one process, fed by the lab. Each handler picks what a task
 * does from its number ([[SoakTask]]): succeed, fail and be retried, fail for good, snooze, or run long
 * enough for the lab to cancel it. Every `sampleEvery` it collects the whole heap (`System.gc()`, a full
 * collection under G1) and prints `heap <seconds since start> <MiB used>`; it prints `ready` once both
 * sources run, and on standard input's end it drains both and prints `done` with its counts.
 *
 * Everything this process keeps beyond weir's own structures is counters: the heap it reports is weir's.
 *
 * args: url schema queue bootstrap topic deadLetterTopic group sampleEveryMillis
 */
object SoakService extends WeirApp:

  /** What the handlers did, counted as they did it. */
  private final class Counts:
    val durableSucceeded = new LongAdder
    val durableFailures = new LongAdder // failed attempts
    val snoozed = new LongAdder
    val kafkaSucceeded = new LongAdder
    val kafkaFailures = new LongAdder // failed attempts, retried in the pipeline or not
    val deadLettered = new LongAdder
    val kafkaOther = new LongAdder // outcomes that leave a record unfinished: none expected

    def line: String =
      s"durable_succeeded=${durableSucceeded.sum} durable_failures=${durableFailures.sum} " +
        s"snoozed=${snoozed.sum} kafka_succeeded=${kafkaSucceeded.sum} kafka_failures=${kafkaFailures.sum} " +
        s"dead_lettered=${deadLettered.sum} kafka_unfinished=${kafkaOther.sum}"

  private object Failed extends RuntimeException("soak: this task fails") with scala.util.control.NoStackTrace

  private def durable(db: Database[IO], queue: String, counts: Counts) =
    val config = WorkerConfig(
      queue = queue,
      pollInterval = 200.millis,
      backoff = Retry.exponential(base = 50.millis, maxAttempts = Int.MaxValue, maxDelay = 500.millis),
      keepCompleted = true, // the lab counts every task's end in `finished`
      retention = None
    )
    val done = Handled.Done(())
    DurableWorker.startSnoozing[IO, Long, Unit](db, config) { source =>
      Pipeline(source)
        .process { job =>
          SoakTask.kind(job.payload) match
            case SoakTask.Kind.Flaky if job.attempt == 1 =>
              IO(counts.durableFailures.increment()) *> IO.raiseError(Failed)
            case SoakTask.Kind.Doomed => IO(counts.durableFailures.increment()) *> IO.raiseError(Failed)
            case SoakTask.Kind.Snoozing
                if java.time.Duration.between(job.createdAt, Instant.now()).toMillis < 1000 =>
              IO(counts.snoozed.increment()).as(job.snooze(1.second))
            case SoakTask.Kind.Long => IO.sleep(2.seconds) *> IO(counts.durableSucceeded.increment()).as(done)
            case _ => IO(counts.durableSucceeded.increment()).as(done)
        }
        .withLimit(Limit.fixed(64))
    }

  private def kafka(bootstrap: String, topic: String, deadLetters: String, group: String, counts: Counts) =
    val settings = KafkaSettings(
      bootstrapServers = bootstrap,
      groupId = group,
      topics = List(topic),
      pollTimeout = 50.millis,
      deadLetterTopic = Some(deadLetters)
    )
    KafkaSource
      .start[IO, String, String, Unit](settings, new StringDeserializer, new StringDeserializer) { source =>
        Pipeline(source)
          .process { record =>
            SoakTask.kind(record.value.toLong) match
              // fails half its attempts: most end succeeded after a retry, a few are dead-lettered
              case SoakTask.Kind.Flaky if ThreadLocalRandom.current().nextBoolean() =>
                IO(counts.kafkaFailures.increment()) *> IO.raiseError(Failed)
              case SoakTask.Kind.Doomed => IO(counts.kafkaFailures.increment()) *> IO.raiseError(Failed)
              case _ => IO(counts.kafkaSucceeded.increment())
          }
          .withRetry(Retry.exponential(base = 10.millis, maxAttempts = 3, maxDelay = 100.millis))
          .withLimit(Limit.fixed(64))
      }
      // unread outcomes count against the source's bound: read them for as long as it runs
      .flatTap(source =>
        source.outcomes
          .foreach {
            case TaskOutcome.Failed(_, _, Disposition.DeadLettered, _) => IO(counts.deadLettered.increment())
            case TaskOutcome.Succeeded(_, _, _) => IO.unit
            case _ => IO(counts.kafkaOther.increment())
          }
          .compile
          .drain
          .background
      )

  /** The heap in use after a full collection, in MiB. */
  private def heapAfterGc: IO[Double] =
    IO.blocking {
      System.gc()
      ManagementFactory.getMemoryMXBean.getHeapMemoryUsage.getUsed.toDouble / (1024 * 1024)
    }

  def run(args: List[String]): IO[ExitCode] =
    args match
      case List(url, schema, queue, bootstrap, topic, deadLetters, group, sampleEvery) =>
        val counts = new Counts
        val config = DatabaseConfig(url, schema = Schema(schema), poolSize = 2)
        val services =
          for
            db <- Database.connect[IO](config)
            worker <- durable(db, queue, counts)
            source <- kafka(bootstrap, topic, deadLetters, group, counts)
          yield (worker, source)
        val stdinClosed =
          IO.blocking(Iterator.continually(System.in.read()).takeWhile(_ >= 0).foreach(_ => ()))
        services.use { (worker, source) =>
          val sampling = IO.monotonic.flatMap { start =>
            (IO.sleep(sampleEvery.toLong.millis) *> heapAfterGc.flatMap(mib =>
              IO.monotonic.flatMap(now => IO.println(f"heap ${(now - start).toMillis / 1000.0}%.1f $mib%.2f"))
            )).foreverM
          }
          IO.println("ready") *> sampling.background.surround(stdinClosed) *>
            (worker.drain(10.seconds), source.drain(10.seconds)).parTupled *>
            (worker.stats, source.stats).tupled.flatMap((w, k) =>
              IO.println(
                s"done ${counts.line} claimed=${w.claimed} completed=${w.completed} dead=${w.dead} " +
                  s"cancelled=${w.cancelled} database_errors=${w.databaseErrors} kafka_commits_failed=${k.commitFailures}"
              )
            )
        }.as(ExitCode.Success)
      case _ =>
        IO.println(
          s"usage: SoakService url schema queue bootstrap topic deadLetterTopic group sampleEveryMillis, was: $args"
        )
          .as(ExitCode(2))
