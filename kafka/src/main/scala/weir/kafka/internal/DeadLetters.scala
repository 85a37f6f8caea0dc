package weir.kafka.internal

import org.apache.kafka.clients.producer.{KafkaProducer, ProducerRecord, RecordMetadata}
import org.apache.kafka.common.KafkaException
import org.apache.kafka.common.header.Headers
import org.apache.kafka.common.header.internals.RecordHeaders

import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.Future

/**
 * Writes records to the dead-letter topic: the original key and value bytes and headers, and headers that
 * say where the record came from and why it is there. The producer is thread-safe: the poller (for
 * undecodable records) and the workers (for records that failed for good) share it.
 */
private[kafka] final class DeadLetters(producer: KafkaProducer[Array[Byte], Array[Byte]], val topic: String):

  def send(
      from: String,
      partition: Int,
      offset: Long,
      key: Array[Byte],
      value: Array[Byte],
      headers: Headers,
      stage: String,
      error: Throwable,
      done: Option[Throwable] => Unit
  ): Future[RecordMetadata] =
    val hs = new RecordHeaders(headers.toArray)
    def put(name: String, v: String): Unit = hs.add(name, v.getBytes(UTF_8)): Unit
    put(DeadLetters.Error, DeadLetters.describe(error))
    put(DeadLetters.ErrorClass, error.getClass.getName)
    put(DeadLetters.Stage, stage)
    put(DeadLetters.Topic, from)
    put(DeadLetters.Partition, partition.toString)
    put(DeadLetters.Offset, offset.toString)
    producer.send(
      new ProducerRecord(topic, null, key, value, hs),
      (_, e) => done(Option(e))
    )

  /** The error that fails the source once a record's dead-letter write has spent its attempts. */
  def failure(from: String, partition: Int, offset: Long, attempts: Int, cause: Throwable): KafkaException =
    new KafkaException(
      s"dead-letter topic '$topic' could not be written for $from-$partition@$offset after $attempts " +
        s"attempt(s), so the record stays unfinished: ${DeadLetters.describe(cause)}",
      cause
    )

private[kafka] object DeadLetters:
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
