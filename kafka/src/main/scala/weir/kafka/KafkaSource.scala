package weir.kafka

import cats.effect.kernel.{Async, Deferred, Resource}
import cats.effect.std.{Queue, Supervisor}
import cats.syntax.all.*
import fs2.{Chunk, Stream}
import org.apache.kafka.clients.consumer.{ConsumerConfig, CooperativeStickyAssignor, KafkaConsumer}
import org.apache.kafka.clients.producer.{KafkaProducer, ProducerConfig}
import org.apache.kafka.common.KafkaException
import org.apache.kafka.common.serialization.{ByteArrayDeserializer, ByteArraySerializer, Deserializer}
import org.typelevel.log4cats.LoggerFactory
import org.typelevel.log4cats.noop.NoOpFactory
import weir.{
  Disposition, FailurePolicy, Interruptible, Pipeline, Retry, Running, Source, Summary, TaskOutcome,
  Validation
}
import weir.kafka.internal.{Counters, DeadLetters, PartitionState, Poller, SourceLog}

import java.util.Properties
import java.util.concurrent.{Executors, ThreadFactory, ThreadLocalRandom}
import scala.concurrent.ExecutionContext
import scala.concurrent.duration.FiniteDuration
import scala.jdk.CollectionConverters.*

/**
 * A consumer of Kafka topics feeding an ordinary weir [[Pipeline]]: every control of the engine (limit,
 * adaptive limit, rate limit, retries, task timeout, failure policy, drain, summary, metrics) works
 * unchanged, and each record's offset is committed once it and every record before it in its partition
 * have finished.
 *
 * {{{
 * KafkaSource.start[IO, String, String, Unit](settings, new StringDeserializer, new StringDeserializer) {
 *   source => Pipeline(source).process(record => handle(record.value)).withLimit(Limit.fixed(100))
 * }.use(kafka => kafka.outcomes.compile.drain)
 * }}}
 *
 * What becomes of a record, by its [[TaskOutcome]], as soon as the pipeline records it:
 *   - succeeded, or failed and dead-lettered, or failed and skipped under [[FailurePolicy.skip]]: finished;
 *     its offset becomes committable once every record before it in its partition has finished too, and
 *     until then the commit's metadata names it, so that the partition's next reader skips it;
 *   - failed and interrupted (its partition was revoked, or the source was released), or aborted or
 *     skipped under [[FailurePolicy.failFast]], or dead-lettering failed, or not started: unfinished; the
 *     committed offset stays before it, and the partition's next reader (this consumer after a restart, or
 *     another) runs it again.
 *
 * Guarantees: at least once. A record runs again after a crash or a lost partition if it had not finished,
 * or if it finished above a record that had not and the commit's metadata could not name it (it is bounded
 * by [[KafkaSettings.commitMetadataBytes]]). A graceful revoke commits before the partition is handed on,
 * having ended every running record of it first, so a key never runs on two consumers at once when
 * handlers end on cancellation.
 */
trait KafkaSource[F[_], K, V, B]:

  /** The pipeline, to change its limit or watch its metrics. Stop it with [[drain]]. */
  def running: Running[F, KafkaRecord[K, V]]

  /**
   * One outcome per record handed to the pipeline, as in [[Pipeline.startWithOutcomes]]; to be read by
   * exactly one reader. A record's offset becomes committable as soon as its outcome is known, whether or
   * not it was read here: a slow reader holds up neither commits nor revokes. Unread outcomes count against
   * [[KafkaSettings.maxInFlight]], so a reader that stops reading stops the consumption (not the commits)
   * once that many are held. The stream ends when the run ends.
   */
  def outcomes: Stream[F, TaskOutcome[KafkaRecord[K, V], B]]

  /**
   * Stops handing out records (every partition stays paused, and the consumer stays in its group) and
   * drains the pipeline: running records get `deadline`, records not started end not started (and run
   * again after a restart). Returns the summary; concurrent calls get the same one, and cancelling the call
   * stops the wait, not the drain.
   */
  def drain(deadline: FiniteDuration): F[Summary[KafkaRecord[K, V]]]

  /** What the source did so far. */
  def stats: F[KafkaStats]

object KafkaSource:

  /**
   * Joins the group, and starts the pipeline `build` makes from the Kafka source, with `order` (default
   * [[RecordOrder.byKey]]) as its task order, replacing any that `build` set: per-key order is the
   * source's. What it commits depends on the failure policy `build` set (default [[FailurePolicy.skip]]):
   * under [[FailurePolicy.failFast]] a record that fails, skipped or not, is never committed. With a
   * [[KafkaSettings.deadLetterTopic]], the policy is [[FailurePolicy.deadLetter]] to that topic, and a
   * pipeline built with another policy than skip is refused with an [[weir.InvalidSettings]]: a record
   * that fails for good is written there, with its error in headers, and counts as finished.
   *
   * Decoding: `keys` and `values` decode each record on the poller thread; a record either rejects is
   * written to the dead-letter topic with its error (or, without one, skipped), counts as finished, and
   * never reaches the pipeline (see [[KafkaStats.undecodable]]). The source owns them from the start: as
   * kafka-clients does with the deserializers it builds from its properties, it calls their
   * `configure(properties, isKey)` with the consumer's properties before the first record (unless
   * [[KafkaSettings.configureDeserializers]] is false), and their `close()` once on release, after the
   * consumer's; an instance given as both is configured as each and closed once. A `configure` that throws
   * fails the resource with an error naming the deserializer.
   *
   * Release: the pipeline is released (running records get its release grace, then are interrupted, and
   * are read again after a restart), the finished prefixes are committed, and the consumer leaves the
   * group. Use [[KafkaSource.drain]] first to stop gracefully.
   *
   * Errors: bad settings fail the resource before anything is opened, with one [[weir.InvalidSettings]]
   * naming every bad value ([[KafkaSettings.errors]]); a failure policy beside a dead-letter topic, and the
   * pipeline's own bad settings, fail it with an [[weir.InvalidSettings]] too. A consumer that
   * fails (its poll throws), or a dead-letter write that fails after [[KafkaSettings.deadLetterRetry]]'s
   * attempts, ends the pipeline's source with that error (its [[weir.StopReason]] says so); the records
   * received go on to their outcomes, and the record not written stays unfinished.
   *
   * Logs: through the `LoggerFactory` in scope (none: nothing is logged), on `weir.kafka.consumer` the
   * partitions assigned and revoked (INFO) or lost (WARN), and a streak of failed commits once when it
   * begins (WARN) and once when it ends (INFO, with its count); on `weir.kafka.deadLetters` each record
   * written to the dead-letter topic at DEBUG, a count of them every minute at WARN, and a write that fails
   * the source at ERROR. Nothing per record above DEBUG. `docs/guide.md` ("Logging") lists every line.
   */
  def start[F[_], K, V, B](
      settings: KafkaSettings,
      keys: Deserializer[K],
      values: Deserializer[V],
      order: RecordOrder[K, V] = RecordOrder.byKey
  )(build: Source[F, KafkaRecord[K, V]] => Pipeline[F, KafkaRecord[K, V], B])(using
      F: Async[F]
  )(using logs: LoggerFactory[F] = NoOpFactory[F]): Resource[F, KafkaSource[F, K, V, B]] =
    for
      _ <- Validation.resource("KafkaSettings", settings.errors)
      ec <- pollerThread[F](settings.groupId)
      // released after the poller: the consumer's thread is done with them
      _ <- deserializers(settings, keys, values)
      counters = new Counters
      log <- Resource.eval(SourceLog(logs, settings.groupId, settings.deadLetterTopic, counters))
      // released after the poller: the last summary counts the dead letters of the release too
      _ <- log.summaries(SourceLog.summaryEvery)
      deadLetters <- settings.deadLetterTopic.traverse(topic =>
        Resource
          .make(F.blocking(new KafkaProducer(
            producerProperties(settings),
            new ByteArraySerializer,
            new ByteArraySerializer
          )))(p =>
            F.blocking(p.close())
          )
          .map(new DeadLetters(_, topic))
      )
      poller <- Resource.make(F.evalOn(
        F.delay {
          val consumer = new KafkaConsumer(
            consumerProperties(settings),
            new ByteArrayDeserializer,
            new ByteArrayDeserializer
          )
          val p = new Poller(consumer, settings, keys, values, deadLetters, counters)
          // the resource's release runs only once this returns: a refused subscription closes the consumer here
          try p.subscribe()
          catch
            case e: Throwable =>
              consumer.close()
              throw e
          p
        },
        ec
      ))(p =>
        // the revoke of the release is logged too
        F.guarantee(F.evalOn(F.delay(p.close()), ec), F.evalOn(F.delay(p.events()), ec).flatMap(log.events))
      )
      queue <- Resource.eval(Queue.unbounded[F, Option[Chunk[KafkaRecord[K, V] & Interruptible]]])
      failure <- Resource.eval(Deferred[F, Throwable])
      // the first failure ends the records: the poller goes on polling, every partition paused, so that the
      // consumer stays in its group while the records received run to their outcomes
      fail = (e: Throwable) =>
        failure.complete(e).flatMap(first =>
          (log.deadLetterFailed(e) *> F.delay(poller.stop()) *> queue.offer(None)).whenA(first)
        )
      // the queue holds at most maxInFlight records plus one poll's: past that the poller pauses
      loop = F.evalOn(F.delay((poller.round(), poller.events())), ec)
        .flatMap((rs, happened) =>
          log.events(happened) *> (if rs.isEmpty then F.unit else queue.offer(Some(Chunk.from(rs))))
        )
        .flatMap(_ => F.delay(poller.failed).flatMap(_.traverse_(fail)))
        .foreverM[Unit]
      _ <- F.background(loop.handleErrorWith(e => failure.complete(e) *> queue.offer(None)))
      records = Stream.fromQueueNoneTerminatedChunk(queue) ++
        Stream.eval(failure.tryGet).flatMap(_.fold(Stream.empty)(Stream.raiseError[F]))
      pipeline = build(Source.refusable(records))
      // what the source commits depends on the policy the pipeline was built with (see `finish`)
      built = pipeline.failurePolicy
      _ <- Validation.resource(
        "KafkaSource",
        Validation.check(
          settings.deadLetterTopic.isEmpty || isSkip(built),
          s"with a deadLetterTopic the topic is the failure policy: leave the pipeline's at skip, was: $built"
        )
      )
      policy =
        deadLetters.fold(built)(dl => deadLetterPolicy(dl, settings.deadLetterRetry, counters, log, fail))
      skips = deadLetters.isEmpty && isSkip(built)
      // released after the pipeline, whose release ends its outcome stream: the reader sees every outcome
      // the pipeline hands out, those of its release included
      readers <- Supervisor[F](await = true)
      started <- pipeline.withOrder(order.taskOrder).withFailurePolicy(policy).startWithOutcomes
      forward <- Resource.eval(Queue.unbounded[F, Option[Chunk[TaskOutcome[KafkaRecord[K, V], B]]]])
      // a record's offset is committable once its outcome is known, not once the user read it: this reader
      // keeps the pipeline's outcome stream empty, and the unread outcomes count against maxInFlight instead
      _ <- Resource.eval(readers.supervise(F.guarantee(
        started._2.chunks
          .evalMap(os =>
            F.delay {
              PartitionState.finishAll(os.toVector.map(o => (o.task.entry, o, counts(o, skips))))
              counters.unread.addAndGet(os.size): Unit
            } *> forward.offer(Some(os))
          )
          .compile
          .drain,
        forward.offer(None)
      )))
    yield
      val run = started._1
      new KafkaSource[F, K, V, B]:
        def running: Running[F, KafkaRecord[K, V]] = run
        def outcomes: Stream[F, TaskOutcome[KafkaRecord[K, V], B]] =
          Stream.fromQueueNoneTerminatedChunk(forward).chunks
            .evalTap(os => F.delay(counters.unread.addAndGet(-os.size)))
            .unchunks
        def drain(deadline: FiniteDuration): F[Summary[KafkaRecord[K, V]]] =
          // the source's stream ends here rather than at the drain's deadline: a record the poller hands
          // out after the end is never received, so it stays unfinished and is read again later. The drain
          // is requested first: the stream's end alone, with every record done, would end the run as
          // completed before a request made after it. Only the wait is cancelable: a drain cut between its
          // request and the stream's end would wait for its deadline
          F.uncancelable(_ => run.requestDrain(deadline) *> F.delay(poller.stop()) *> queue.offer(None)) *>
            run.join
        def stats: F[KafkaStats] = F.delay(counters.stats)

  private def isSkip(policy: FailurePolicy[?, ?]): Boolean = policy.kind == FailurePolicy.Kind.Skip

  /**
   * Whether a record's outcome finishes its offset (see [[KafkaSource]]): a skipped record counts only under
   * the skip policy (`skips`); under fail-fast, a record that fails while the run stops is recorded skipped,
   * and must run again.
   */
  private def counts[K, V, B](outcome: TaskOutcome[KafkaRecord[K, V], B], skips: Boolean): Boolean =
    outcome match
      case TaskOutcome.Succeeded(_, _, _) => true
      case TaskOutcome.Failed(_, _, Disposition.DeadLettered, _) => true
      case TaskOutcome.Failed(_, _, Disposition.Skipped, _) => skips
      case TaskOutcome.Failed(_, _, _, _) => false
      case TaskOutcome.NotStarted(_, _) => false

  /**
   * Writes a record that failed for good to the dead-letter topic, retried as `retry` says. A retry's
   * backoff ends early when the record's partition is revoked (the record stays unfinished, and its next
   * owner runs it); a write that spends its attempts fails the source (`fail`) and the record, unfinished.
   */
  private def deadLetterPolicy[F[_], K, V](
      dl: DeadLetters,
      retry: Retry,
      counters: Counters,
      log: SourceLog[F],
      fail: Throwable => F[Unit]
  )(using F: Async[F]): FailurePolicy[F, KafkaRecord[K, V]] =
    FailurePolicy.deadLetter[F, KafkaRecord[K, V]] { (r, error) =>
      val entry = r.entry
      // `send` blocks while it waits for the topic's metadata or for room in the producer's buffer
      val send = F.async[Unit] { cb =>
        F.blocking(dl.send(
          r.topic,
          r.partition,
          r.offset,
          r.rawKey,
          r.rawValue,
          r.headers,
          DeadLetters.Process,
          error,
          {
            case None => cb(Right(()))
            case Some(e) => cb(Left(e))
          }
        )).as(None)
      }
      // the backoff's registration is left in place when the backoff ends: the record stays in an attempt,
      // which a revoke waits for, until its outcome (the next backoff's registration replaces it)
      val interrupted = F.async[String] { cb =>
        F.delay {
          entry.life.onInterrupt(reason => cb(Right(reason))): Unit
          Some(F.unit)
        }
      }
      def attempt(n: Int): F[Unit] =
        send.handleErrorWith { cause =>
          if n < retry.maxAttempts && retry.retryable(cause) then
            F.delay(retry.backoff(n, ThreadLocalRandom.current()))
              .flatMap(d => F.race(F.sleep(d), interrupted))
              .flatMap {
                case Left(_) => attempt(n + 1)
                case Right(reason) =>
                  F.raiseError(new KafkaException(
                    s"dead-letter write to '${dl.topic}' stopped: $reason",
                    cause
                  ))
              }
          else
            val e = dl.failure(r.topic, r.partition, r.offset, n, cause)
            F.delay(counters.deadLetterFailures.incrementAndGet()) *> fail(e) *> F.raiseError(e)
        }
      F.delay(entry.state.deadLettering(entry)).flatMap { writable =>
        if !writable then
          F.raiseError(new KafkaException(
            s"partition ${r.topicPartition} was revoked: not written to '${dl.topic}', its next owner runs it"
          ))
        else
          attempt(1) *> F.delay(counters.deadLettered.incrementAndGet()) *>
            log.deadLettered(r.topicPartition, r.offset, "failed", error)
      }
    }

  /** The one thread that owns the consumer (a `KafkaConsumer` is not thread-safe). */
  private def pollerThread[F[_]](group: String)(using F: Async[F]): Resource[F, ExecutionContext] =
    val factory: ThreadFactory = r =>
      val t = new Thread(r, s"weir-kafka-poller-$group")
      t.setDaemon(true)
      t
    Resource
      .make(F.delay(Executors.newSingleThreadExecutor(factory)))(e => F.delay(e.shutdown()))
      .map(ExecutionContext.fromExecutorService)

  /**
   * Configures the user's deserializers and closes them on release, as kafka-clients does with the ones it
   * builds itself (`Deserializers`): each is handed the consumer's properties and whether it decodes keys.
   * The same instance given for keys and values is closed once.
   */
  private def deserializers[F[_], K, V](s: KafkaSettings, keys: Deserializer[K], values: Deserializer[V])(
      using F: Async[F]
  ): Resource[F, Unit] =
    val properties: java.util.Map[String, AnyRef] =
      consumerProperties(s).asScala.map((k, v) => k.toString -> v).asJava
    def configure(d: Deserializer[?], isKey: Boolean): F[Unit] =
      val role = if isKey then "key" else "value"
      F.blocking(d.configure(properties, isKey)).whenA(s.configureDeserializers).adaptError(e =>
        new KafkaException(
          s"the $role deserializer (${d.getClass.getName}) refused the consumer's properties: ${e.getMessage}",
          e
        )
      )
    def owned(d: Deserializer[?], isKey: Boolean): Resource[F, Unit] =
      Resource.make(configure(d, isKey).onError(_ => F.blocking(d.close()).attempt.void))(_ =>
        F.blocking(d.close())
      )
    owned(keys, isKey = true) *>
      (if (values: AnyRef) eq keys then Resource.eval(configure(values, isKey = false))
       else owned(values, isKey = false))

  private def consumerProperties(s: KafkaSettings): Properties =
    val p = new Properties
    // cooperative-sticky unless the user chose otherwise (or the consumer protocol, which takes no assignor)
    if !s.properties.contains(ConsumerConfig.GROUP_PROTOCOL_CONFIG) then
      p.setProperty(
        ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
        classOf[CooperativeStickyAssignor].getName
      ): Unit
    p.setProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"): Unit
    p.setProperty(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, math.min(500, s.maxInFlight).toString): Unit
    s.properties.foreach((k, v) => p.setProperty(k, v): Unit)
    p.setProperty(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, s.bootstrapServers): Unit
    p.setProperty(ConsumerConfig.GROUP_ID_CONFIG, s.groupId): Unit
    p.setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false"): Unit
    p

  /** The user's properties a producer knows (security, client id, ...), all acks, the same servers. */
  private def producerProperties(s: KafkaSettings): Properties =
    val p = new Properties
    val known = ProducerConfig.configNames()
    s.properties.foreach((k, v) => if known.contains(k) then p.setProperty(k, v): Unit)
    if !s.properties.contains(ProducerConfig.ACKS_CONFIG) then
      p.setProperty(ProducerConfig.ACKS_CONFIG, "all"): Unit
    p.setProperty(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, s.bootstrapServers): Unit
    p
