package weir.kafka

import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.header.Headers
import weir.Interruptible
import weir.kafka.internal.{Counters, Entry, PartitionState, RawKey}

/**
 * A record a [[KafkaSource]] received and decoded: what the pipeline's handler receives.
 *
 * When its partition is revoked, a record that has not started refuses to start (it ends not started, and
 * the partition's next owner runs it), and one that is running is interrupted once
 * [[KafkaSettings.revokeGrace]] has passed (its handler is cancelled; it ends interrupted, and the next
 * owner runs it again). The engine learns this through [[weir.Interruptible]], which only the source's
 * own records implement: asking a record whether it may start marks it started, so that question is the
 * engine's alone.
 */
sealed abstract class KafkaRecord[+K, +V] private[kafka] (
    val topic: String,
    val partition: Int,
    val offset: Long,
    val timestamp: Long,
    val key: K,
    val value: V,
    val headers: Headers,
    private[kafka] val rawKey: Array[Byte],
    private[kafka] val rawValue: Array[Byte],
    private[kafka] val entry: Entry
):

  def topicPartition: TopicPartition = entry.state.partition

  /** Its key for [[RecordOrder.byKey]], made once here rather than each time the engine asks for it. */
  private[kafka] val rawKeyOrder: RawKey = new RawKey(entry.state.partition, rawKey)

  override def toString: String = s"KafkaRecord($topic-$partition@$offset, $key)"

object KafkaRecord:

  /**
   * A record that no source received, for a handler's tests (weir-testkit-kafka's `TestRecord` builds
   * them). It is not [[weir.Interruptible]]: an engine runs it as any plain task, never refused nor
   * interrupted, and no source commits its offset.
   */
  def detached[K, V](
      topic: String,
      partition: Int,
      offset: Long,
      timestamp: Long,
      key: K,
      value: V,
      headers: Headers
  ): KafkaRecord[K, V] =
    // the window of a partition that no source holds: only the record's partition is ever read from it;
    // no bytes stand behind the key and value, which only a source's order and dead letters read
    val entry = new Entry(offset, new PartitionState(new TopicPartition(topic, partition), new Counters))
    new Detached(topic, partition, offset, timestamp, key, value, headers, null, null, entry)

  private[kafka] def apply[K, V](
      topic: String,
      partition: Int,
      offset: Long,
      timestamp: Long,
      key: K,
      value: V,
      headers: Headers,
      rawKey: Array[Byte],
      rawValue: Array[Byte],
      entry: Entry
  ): KafkaRecord[K, V] & Interruptible =
    new Received(topic, partition, offset, timestamp, key, value, headers, rawKey, rawValue, entry)

  /**
   * The record as the engine sees it: its start and registrations are its entry's [[weir.Tracked]] life's
   * (a start is refused once its partition is revoked, see `PartitionState.tryStart`), and the end of an
   * attempt that was not interrupted wakes a revoke that waits for it.
   */
  private final class Received[K, V](
      topic: String,
      partition: Int,
      offset: Long,
      timestamp: Long,
      key: K,
      value: V,
      headers: Headers,
      rawKey: Array[Byte],
      rawValue: Array[Byte],
      entry: Entry
  ) extends KafkaRecord[K, V](
        topic,
        partition,
        offset,
        timestamp,
        key,
        value,
        headers,
        rawKey,
        rawValue,
        entry
      )
      with Interruptible:

    def tryStart(): Option[String] = entry.state.tryStart(entry)

    def onInterrupt(interrupt: String => Unit): () => Unit =
      val unregister = entry.life.onInterrupt(interrupt)
      () =>
        unregister()
        entry.state.attemptEnded(entry)

  private final class Detached[K, V](
      topic: String,
      partition: Int,
      offset: Long,
      timestamp: Long,
      key: K,
      value: V,
      headers: Headers,
      rawKey: Array[Byte],
      rawValue: Array[Byte],
      entry: Entry
  ) extends KafkaRecord[K, V](
        topic,
        partition,
        offset,
        timestamp,
        key,
        value,
        headers,
        rawKey,
        rawValue,
        entry
      )
