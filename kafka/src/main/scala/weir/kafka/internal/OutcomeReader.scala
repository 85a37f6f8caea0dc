package weir.kafka.internal

import cats.effect.kernel.{Async, Deferred, Resource}
import cats.effect.std.Queue
import cats.syntax.all.*
import fs2.{Chunk, Stream}
import weir.{Disposition, Service, TaskOutcome}
import weir.kafka.KafkaRecord

import scala.concurrent.duration.Duration

/**
 * Reads the pipeline's outcomes as the pipeline hands them out, so that a record's offset is committable
 * once its outcome is known, not once the user has read it: it ends each record's life and window entry
 * ([[PartitionState.finishAll]]), then forwards the outcomes to the user's stream ([[outcomes]]), where
 * they count against `maxInFlight` until read. A [[weir.Service]] (`outcomes`) whose one round reads the
 * pipeline's stream to its end.
 *
 * It is acquired before the pipeline and released after it, whose release ends its stream: the user's
 * stream sees every outcome the pipeline hands out, those of its release included. Its release waits for
 * that end, however long; a pipeline that never started ends it at once.
 */
private[kafka] final class OutcomeReader[F[_], K, V, B] private (
    pipeline: Deferred[F, Stream[F, TaskOutcome[KafkaRecord[K, V], B]]],
    forward: Queue[F, Option[Chunk[TaskOutcome[KafkaRecord[K, V], B]]]],
    counters: Counters
)(using F: Async[F]):

  /** Starts reading `stream`, the pipeline's outcomes; once only. */
  def read(stream: Stream[F, TaskOutcome[KafkaRecord[K, V], B]]): F[Unit] = pipeline.complete(stream).void

  /** The outcomes, for the source's one reader; the stream ends when the pipeline's does. */
  def outcomes: Stream[F, TaskOutcome[KafkaRecord[K, V], B]] =
    Stream.fromQueueNoneTerminatedChunk(forward).chunks
      .evalTap(os => F.delay(counters.unread.addAndGet(-os.size)))
      .unchunks

private[kafka] object OutcomeReader:

  /** One round, to the end of the pipeline's stream, which a release waits for. */
  val settings: Service.Settings =
    Service.Settings(
      "outcomes",
      every = Duration.Zero,
      backoff = Service.Backoff.constant(Duration.Zero),
      finishWithin = Duration.Inf
    )

  /**
   * A reader of outcomes whose records finish when `skips` says a skipped one does (see
   * [[OutcomeReader.counts]]).
   */
  def resource[F[_], K, V, B](counters: Counters, skips: Boolean)(using
      F: Async[F]
  ): Resource[F, OutcomeReader[F, K, V, B]] =
    for
      pipeline <- Resource.eval(Deferred[F, Stream[F, TaskOutcome[KafkaRecord[K, V], B]]])
      forward <- Resource.eval(Queue.unbounded[F, Option[Chunk[TaskOutcome[KafkaRecord[K, V], B]]]])
      read = pipeline.get.flatMap(
        _.chunks.evalMap(os =>
          F.delay {
            PartitionState.finishAll(os.toVector.map(o => (o.task.entry, o, counts(o, skips))))
            counters.unread.addAndGet(os.size): Unit
          } *> forward.offer(Some(os))
        ).compile.drain
      )
      // an error of the pipeline's stream ends the reader as its end does, and the user's stream with it
      _ <- Service.finishing(settings, Service.Faults.ignored[F], pipeline.complete(Stream.empty).void)(
        F.guarantee(read, forward.offer(None)).attempt.as(Service.Next.Done)
      )
    yield new OutcomeReader(pipeline, forward, counters)

  /**
   * Whether a record's outcome finishes its offset (see [[weir.kafka.KafkaSource]]): a skipped record counts
   * only under the skip policy (`skips`); under fail-fast, a record that fails while the run stops is
   * recorded skipped, and must run again.
   */
  private def counts[K, V, B](outcome: TaskOutcome[KafkaRecord[K, V], B], skips: Boolean): Boolean =
    outcome match
      case TaskOutcome.Succeeded(_, _, _) => true
      case TaskOutcome.Failed(_, _, Disposition.DeadLettered, _) => true
      case TaskOutcome.Failed(_, _, Disposition.Skipped, _) => skips
      case TaskOutcome.Failed(_, _, _, _) => false
      case TaskOutcome.NotStarted(_, _) => false
