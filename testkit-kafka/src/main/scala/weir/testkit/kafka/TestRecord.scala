package weir.testkit.kafka

import cats.effect.kernel.Sync
import cats.syntax.all.*
import org.apache.kafka.common.header.internals.RecordHeaders
import weir.Validation
import weir.kafka.KafkaRecord

import java.nio.charset.StandardCharsets.UTF_8

/**
 * A [[weir.kafka.KafkaRecord]] as a source would hand it to a handler, built by a test: every field a
 * handler reads, by name, with defaults (`TestRecord("order-7", order, partition = 2, offset = 41)`), so
 * that a handler is tested without a broker.
 *
 *   - `timestamp` unset is the time of `build` on `F`'s clock, in milliseconds since the epoch, as for a
 *     record produced just now.
 *   - `headers` are Kafka's: names, possibly repeated, with byte values, in this order.
 *
 * The built record is a plain task, not one a source tracks: an engine never refuses nor interrupts it, and
 * no offset is committed for it. `build` checks the fields ([[errors]]) and fails in `F` with one
 * [[weir.InvalidSettings]] naming every bad value.
 */
final case class TestRecord[K, V](
    key: K,
    value: V,
    topic: String = "test",
    partition: Int = 0,
    offset: Long = 0L,
    timestamp: Option[Long] = None,
    headers: List[(String, Array[Byte])] = Nil
):

  /** What no received record could have, each bad value named; empty when valid. */
  def errors: List[String] =
    Validation.check(topic != null && topic.nonEmpty, s"topic must not be empty, was: '$topic'") ++
      Validation.check(partition >= 0, s"partition must be >= 0, was: $partition") ++
      Validation.check(offset >= 0, s"offset must be >= 0, was: $offset") ++
      Validation.check(
        timestamp.forall(_ >= 0),
        s"timestamp must be >= 0, was: ${timestamp.getOrElse(0L)}"
      ) ++
      headers.flatMap((name, _) =>
        Validation.check(name != null && name.nonEmpty, s"header names must not be empty, was: '$name'")
      )

  /** The record; see [[TestRecord]]. */
  def build[F[_]](using F: Sync[F]): F[KafkaRecord[K, V]] =
    Validation.raise[F]("TestRecord", errors) *>
      timestamp.fold(F.realTime.map(_.toMillis))(F.pure).flatMap { at =>
        F.delay {
          val recordHeaders = new RecordHeaders()
          headers.foreach((name, value) => recordHeaders.add(name, value): Unit)
          KafkaRecord.detached(topic, partition, offset, at, key, value, recordHeaders)
        }
      }

object TestRecord:

  /** A header with a UTF-8 text value, for [[TestRecord.headers]]. */
  def header(name: String, value: String): (String, Array[Byte]) = name -> value.getBytes(UTF_8)
