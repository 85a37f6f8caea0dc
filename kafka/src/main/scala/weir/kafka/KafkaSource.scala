package weir.kafka

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import fs2.Stream
import org.apache.kafka.clients.producer.KafkaProducer
import org.apache.kafka.common.serialization.{ByteArraySerializer, Deserializer}
import org.typelevel.log4cats.LoggerFactory
import org.typelevel.log4cats.noop.NoOpFactory
import weir.{FailurePolicy, Pipeline, Running, Source, Summary, TaskOutcome, Validation}
import weir.kafka.internal.{
  ClientProperties, Counters, DeadLetterPolicy, DeadLetters, OutcomeReader, PollLoop, SourceLog
}

import scala.concurrent.duration.FiniteDuration

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
      // released after the poller: the consumer's thread is done with them
      _ <- ClientProperties.deserializers(settings, keys, values)
      counters = new Counters
      log <- Resource.eval(SourceLog(logs, settings.groupId, settings.deadLetterTopic, counters))
      // released after the poller: the last summary counts the dead letters of the release too
      _ <- log.summaries(SourceLog.summaryEvery)
      deadLetters <- settings.deadLetterTopic.traverse(topic =>
        Resource
          .make(F.blocking(new KafkaProducer(
            ClientProperties.producerProperties(settings),
            new ByteArraySerializer,
            new ByteArraySerializer
          )))(p =>
            F.blocking(p.close())
          )
          .map(new DeadLetters(_, topic))
      )
      poller <- PollLoop.resource(settings, keys, values, deadLetters, counters, log)
      pipeline = build(Source.refusable(poller.records))
      // what the source commits depends on the policy the pipeline was built with (see `OutcomeReader`)
      built = pipeline.failurePolicy
      _ <- Validation.resource(
        "KafkaSource",
        Validation.check(
          settings.deadLetterTopic.isEmpty || isSkip(built),
          s"with a deadLetterTopic the topic is the failure policy: leave the pipeline's at skip, was: $built"
        )
      )
      policy = deadLetters.fold(built)(dl =>
        DeadLetterPolicy[F, K, V](dl, settings.deadLetterRetry, counters, log, poller.fail)
      )
      // released after the pipeline, whose release ends its outcome stream: the reader reads every outcome
      // the pipeline hands out, those of its release included
      reader <- OutcomeReader.resource[F, K, V, B](counters, skips = deadLetters.isEmpty && isSkip(built))
      started <- pipeline.withOrder(order.taskOrder).withFailurePolicy(policy).startWithOutcomes
      _ <- Resource.eval(reader.read(started._2))
    yield
      val run = started._1
      new KafkaSource[F, K, V, B]:
        def running: Running[F, KafkaRecord[K, V]] = run
        def outcomes: Stream[F, TaskOutcome[KafkaRecord[K, V], B]] = reader.outcomes
        def drain(deadline: FiniteDuration): F[Summary[KafkaRecord[K, V]]] =
          // the source's stream ends here rather than at the drain's deadline: a record the poller hands
          // out after the end is never received, so it stays unfinished and is read again later. The drain
          // is requested first: the stream's end alone, with every record done, would end the run as
          // completed before a request made after it. Only the wait is cancelable: a drain cut between its
          // request and the stream's end would wait for its deadline
          F.uncancelable(_ => run.requestDrain(deadline) *> poller.stop) *> run.join
        def stats: F[KafkaStats] = F.delay(counters.stats)

  private def isSkip(policy: FailurePolicy[?, ?]): Boolean = policy.kind == FailurePolicy.Kind.Skip
