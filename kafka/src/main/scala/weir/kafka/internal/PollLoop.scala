package weir.kafka.internal

import cats.effect.kernel.{Async, Deferred, Resource}
import cats.effect.std.Queue
import cats.syntax.all.*
import fs2.{Chunk, Stream}
import org.apache.kafka.clients.consumer.KafkaConsumer
import org.apache.kafka.common.serialization.{ByteArrayDeserializer, Deserializer}
import weir.{Interruptible, Service}
import weir.kafka.{KafkaRecord, KafkaSettings}

import java.util.concurrent.{Executors, ThreadFactory}
import scala.concurrent.ExecutionContext
import scala.concurrent.duration.Duration

/**
 * The source's consumer and its loop: a [[weir.Service]] (`poller`) whose round is one [[Poller.round]] on
 * the poller's one thread (a `KafkaConsumer` is not thread-safe), its records queued for the pipeline
 * ([[records]]). A record that does not decode is written to the dead-letter topic between two rounds
 * ([[DeadLetters.write]]), so the consumer does not poll while the write is retried.
 *
 * The first failure ([[fail]]: the consumer's, or a dead-letter write that spent its attempts) ends the
 * records, with that error: the poller goes on polling, every partition paused, so that the consumer stays
 * in its group while the records received run to their outcomes. A consumer that fails ends the loop.
 */
private[kafka] final class PollLoop[F[_], K, V] private (
    poller: Poller[K, V],
    queue: Queue[F, Option[Chunk[KafkaRecord[K, V] & Interruptible]]],
    failure: Deferred[F, Throwable],
    log: SourceLog[F]
)(using F: Async[F]):

  /** The records, in offset order per partition, until [[stop]] or the first failure (then raised). */
  def records: Stream[F, KafkaRecord[K, V] & Interruptible] =
    Stream.fromQueueNoneTerminatedChunk(queue) ++
      Stream.eval(failure.tryGet).flatMap(_.fold(Stream.empty)(Stream.raiseError[F]))

  /** No record is handed out any more: every partition stays paused, the consumer in its group. */
  def stop: F[Unit] = F.delay(poller.stop()) *> queue.offer(None)

  /** Ends the records with `e`, if no failure did first (logged at ERROR, once). */
  def fail(e: Throwable): F[Unit] =
    failure.complete(e).flatMap(first => (log.deadLetterFailed(e) *> stop).whenA(first))

private[kafka] object PollLoop:

  /** A round after the other, at once; its failures are the round's own (see [[PollLoop]]). */
  val settings: Service.Settings =
    Service.Settings("poller", every = Duration.Zero, backoff = Service.Backoff.constant(Duration.Zero))

  /**
   * Opens the consumer on its thread, subscribes, and polls until release, which stops the loop, then
   * commits the finished prefixes and leaves the group ([[Poller.close]]: its revoke is logged too).
   */
  def resource[F[_], K, V](
      settings: KafkaSettings,
      keys: Deserializer[K],
      values: Deserializer[V],
      deadLetters: Option[DeadLetters],
      counters: Counters,
      log: SourceLog[F]
  )(using F: Async[F]): Resource[F, PollLoop[F, K, V]] =
    for
      ec <- pollerThread[F](settings.groupId)
      poller <- Resource.make(F.evalOn(
        F.delay {
          val consumer = new KafkaConsumer(
            ClientProperties.consumerProperties(settings),
            new ByteArrayDeserializer,
            new ByteArrayDeserializer
          )
          val p = new Poller(consumer, settings, keys, values, deadLetters.isDefined, counters)
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
      // holds at most maxInFlight records plus one poll's: past that the poller pauses
      queue <- Resource.eval(Queue.unbounded[F, Option[Chunk[KafkaRecord[K, V] & Interruptible]]])
      failure <- Resource.eval(Deferred[F, Throwable])
      loop = new PollLoop(poller, queue, failure, log)
      // a written dead letter counts as finished on the poller's thread, and what that did is logged at once
      deadLettered = (u: Poller.Undecodable) =>
        F.evalOn(F.delay { poller.deadLettered(u); poller.events() }, ec).flatMap(log.events)
      writeDeadLetter = (u: Poller.Undecodable) =>
        deadLetters.traverse_(dl =>
          dl.write(u.from, DeadLetters.Decode, u.error, settings.deadLetterRetry, counters, F.never)
            .flatMap(_.fold(notWritten => loop.fail(notWritten.error), _ => deadLettered(u)))
        )
      round = F.evalOn(F.delay((poller.round(), poller.events())), ec).flatMap((polled, happened) =>
        log.events(happened) *>
          (if polled.records.isEmpty then F.unit else queue.offer(Some(Chunk.from(polled.records)))) *>
          polled.undecodable.traverse_(writeDeadLetter)
      )
      _ <- Service.run(PollLoop.settings, Service.Faults.ignored[F])(
        round.as(Service.Next.After(Duration.Zero)).handleErrorWith(e =>
          failure.complete(e) *> queue.offer(None).as(Service.Next.Done)
        )
      )
    yield loop

  /** The one thread that owns the consumer (a `KafkaConsumer` is not thread-safe). */
  private def pollerThread[F[_]](group: String)(using F: Async[F]): Resource[F, ExecutionContext] =
    val factory: ThreadFactory = r =>
      val t = new Thread(r, s"weir-kafka-poller-$group")
      t.setDaemon(true)
      t
    Resource
      .make(F.delay(Executors.newSingleThreadExecutor(factory)))(e => F.delay(e.shutdown()))
      .map(ExecutionContext.fromExecutorService)
