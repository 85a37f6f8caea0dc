package weir.kafka.internal

import cats.effect.kernel.Async
import cats.syntax.all.*
import org.apache.kafka.common.KafkaException
import weir.{FailurePolicy, Retry}
import weir.kafka.KafkaRecord

/**
 * The failure policy of a source with a dead-letter topic: a record that failed for good is written there
 * ([[DeadLetters.write]], retried as `retry` says), then counts as finished. A retry's backoff ends early
 * when the record's partition is revoked (the record stays unfinished, and its next owner runs it); a
 * write that spends its attempts fails the source (`fail`) and the record, unfinished.
 */
private[kafka] object DeadLetterPolicy:

  def apply[F[_], K, V](
      dl: DeadLetters,
      retry: Retry,
      counters: Counters,
      log: SourceLog[F],
      fail: Throwable => F[Unit]
  )(using F: Async[F]): FailurePolicy[F, KafkaRecord[K, V]] =
    FailurePolicy.deadLetter[F, KafkaRecord[K, V]] { (r, error) =>
      val entry = r.entry
      // the backoff's registration is left in place when the backoff ends: the record stays in an attempt,
      // which a revoke waits for, until its outcome (the next backoff's registration replaces it)
      val interrupted = F.async[String] { cb =>
        F.delay {
          entry.life.onInterrupt(reason => cb(Right(reason))): Unit
          Some(F.unit)
        }
      }
      val from = DeadLetters.From(r.topic, r.partition, r.offset, r.rawKey, r.rawValue, r.headers)
      F.delay(entry.state.deadLettering(entry)).flatMap { writable =>
        if !writable then
          F.raiseError(new KafkaException(
            s"partition ${r.topicPartition} was revoked: not written to '${dl.topic}', its next owner runs it"
          ))
        else
          dl.write(from, DeadLetters.Process, error, retry, counters, interrupted).flatMap {
            case Right(()) =>
              F.delay(counters.deadLettered.incrementAndGet()) *>
                log.deadLettered(r.topicPartition, r.offset, "failed", error)
            case Left(DeadLetters.NotWritten.Stopped(e)) => F.raiseError(e)
            case Left(DeadLetters.NotWritten.Spent(e)) => fail(e) *> F.raiseError(e)
          }
      }
    }
