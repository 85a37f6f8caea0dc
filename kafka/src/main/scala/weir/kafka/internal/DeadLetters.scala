package weir.kafka.internal

import cats.effect.kernel.Async
import cats.syntax.all.*
import org.apache.kafka.clients.producer.{KafkaProducer, ProducerRecord}
import org.apache.kafka.common.KafkaException
import org.apache.kafka.common.header.Headers
import org.apache.kafka.common.header.internals.RecordHeaders
import weir.Retry

import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.ThreadLocalRandom

/**
 * Writes records to the dead-letter topic: the original key and value bytes and headers, and headers that
 * say where the record came from and why it is there. The producer is thread-safe: the poller (for
 * undecodable records) and the workers (for records that failed for good) share it.
 */
private[kafka] final class DeadLetters(producer: KafkaProducer[Array[Byte], Array[Byte]], val topic: String):

  /**
   * Writes one record, retried as `retry` says: after the `n`-th failed attempt, if `retry` has attempts
   * left and finds the error retryable, it waits `retry`'s backoff, which `interrupted` ends early
   * ([[DeadLetters.NotWritten.Stopped]]: the record stays unfinished, and its partition's next owner runs
   * it). Once the attempts are spent it counts a failure ([[DeadLetters.NotWritten.Spent]], whose error is
   * to fail the source). The one retry of both writers: the poller's, for an undecodable record (never
   * interrupted: nothing revokes a partition while the poller writes), and the failure policy's, for a
   * record that failed for good.
   *
   * Blocks: the producer's `send` waits on the blocking pool for the topic's metadata or for room in its
   * buffer; the write itself is waited for without a thread. Cancelable between attempts and while one is
   * in flight (the record is then not written, and stays unfinished).
   */
  def write[F[_]](
      record: DeadLetters.From,
      stage: String,
      error: Throwable,
      retry: Retry,
      counters: Counters,
      interrupted: F[String]
  )(using F: Async[F]): F[Either[DeadLetters.NotWritten, Unit]] =
    DeadLetters.retried(send(record, stage, error), retry, interrupted)(
      stopped =
        (reason, cause) => new KafkaException(s"dead-letter write to '$topic' stopped: $reason", cause),
      spent = (attempts, cause) =>
        counters.deadLetterFailures.incrementAndGet(): Unit
        failure(record.topic, record.partition, record.offset, attempts, cause)
    )

  /** One attempt: the record, with headers that say where it came from and why it is here. */
  private def send[F[_]](record: DeadLetters.From, stage: String, error: Throwable)(using
      F: Async[F]
  ): F[Unit] =
    val hs = new RecordHeaders(record.headers.toArray)
    def put(name: String, v: String): Unit = hs.add(name, v.getBytes(UTF_8)): Unit
    put(DeadLetters.Error, DeadLetters.describe(error))
    put(DeadLetters.ErrorClass, error.getClass.getName)
    put(DeadLetters.Stage, stage)
    put(DeadLetters.Topic, record.topic)
    put(DeadLetters.Partition, record.partition.toString)
    put(DeadLetters.Offset, record.offset.toString)
    // `send` blocks while it waits for the topic's metadata or for room in the producer's buffer
    F.async[Unit] { cb =>
      F.blocking(producer.send(
        new ProducerRecord(topic, null, record.key, record.value, hs),
        (_, e) => cb(Option(e).toLeft(()))
      )).as(None)
    }

  /** The error that fails the source once a record's dead-letter write has spent its attempts. */
  def failure(from: String, partition: Int, offset: Long, attempts: Int, cause: Throwable): KafkaException =
    new KafkaException(
      s"dead-letter topic '$topic' could not be written for $from-$partition@$offset after $attempts " +
        s"attempt(s), so the record stays unfinished: ${DeadLetters.describe(cause)}",
      cause
    )

private[kafka] object DeadLetters:

  /** Why a record was not written: its error says so, and names the record. */
  enum NotWritten:
    def error: KafkaException

    /** A backoff was ended by the record's interruption: the record stays unfinished. */
    case Stopped(error: KafkaException)

    /** The attempts are spent: the source is to fail with `error`, the record unfinished. */
    case Spent(error: KafkaException)

  /**
   * `attempt`, retried as `retry` says (see [[DeadLetters.write]]): `stopped` makes the error of a backoff
   * that `interrupted` ended, with its reason and the last attempt's error; `spent` the error of attempts
   * spent, with their number and the last one's error.
   */
  def retried[F[_]](attempt: F[Unit], retry: Retry, interrupted: F[String])(
      stopped: (String, Throwable) => KafkaException,
      spent: (Int, Throwable) => KafkaException
  )(using F: Async[F]): F[Either[NotWritten, Unit]] =
    def after(n: Int): F[Either[NotWritten, Unit]] =
      attempt.as(Right(())).handleErrorWith { cause =>
        if n < retry.maxAttempts && retry.retryable(cause) then
          F.delay(retry.backoff(n, ThreadLocalRandom.current())).flatMap(d => F.race(F.sleep(d), interrupted))
            .flatMap {
              case Left(_) => after(n + 1)
              case Right(reason) => F.pure(Left(NotWritten.Stopped(stopped(reason, cause))))
            }
        else F.delay(Left(NotWritten.Spent(spent(n, cause))))
      }
    after(1)

  /** Where a record came from, and its bytes as read. */
  final case class From(
      topic: String,
      partition: Int,
      offset: Long,
      key: Array[Byte],
      value: Array[Byte],
      headers: Headers
  )
  val Error = "weir.error"
  val ErrorClass = "weir.error.class"
  val Stage = "weir.stage"
  val Topic = "weir.topic"
  val Partition = "weir.partition"
  val Offset = "weir.offset"

  /** Stage of a record no deserializer accepted. */
  val Decode = "decode"

  /** Stage of a record whose task failed for good (after the pipeline's retries). */
  val Process = "process"

  def describe(e: Throwable): String =
    val m = Option(e.getMessage).getOrElse("")
    // a header is bounded like any record: the error's first line, cut
    (if m.isEmpty then e.getClass.getName else s"${e.getClass.getName}: $m").linesIterator.nextOption
      .getOrElse("")
      .take(1000)
