package weir.kafka

import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.header.Headers
import weir.Interruptible
import weir.kafka.internal.Entry

/**
 * A record a [[KafkaSource]] received and decoded: what the pipeline's handler receives.
 *
 * A record is [[weir.Interruptible]]: when its partition is revoked, a record that has not started refuses
 * to start (it ends not started, and the partition's next owner runs it), and one that is running is
 * interrupted once [[KafkaSettings.revokeGrace]] has passed (its handler is cancelled; it ends interrupted,
 * and the next owner runs it again).
 */
final class KafkaRecord[+K, +V] private[kafka] (
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
) extends Interruptible:

  def topicPartition: TopicPartition = entry.state.partition

  /** Why this record must not start: its partition was revoked; `None` when it may. */
  def refusal: Option[String] = entry.state.tryStart(entry)

  /** Registers the engine's interruption of this record's attempt: see [[weir.Interruptible]]. */
  def onInterrupt(interrupt: String => Unit): () => Unit = entry.interruption.onInterrupt(interrupt)

  override def toString: String = s"KafkaRecord($topic-$partition@$offset, $key)"
