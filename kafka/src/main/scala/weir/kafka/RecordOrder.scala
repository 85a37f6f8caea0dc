package weir.kafka

import org.apache.kafka.common.TopicPartition

import weir.TaskOrder
import weir.kafka.internal.RawKey

/**
 * In which order a [[KafkaSource]]'s records run. Each is the engine's own [[TaskOrder.byKey]] on a key
 * that includes the record's partition, so tasks of one key run one at a time in offset order, different
 * keys run concurrently within the pipeline's limit, and the engine's bookkeeping is bounded by the tasks
 * in flight, whatever the number of keys.
 */
sealed trait RecordOrder[-K, -V]:
  private[kafka] def taskOrder: TaskOrder[KafkaRecord[K, V]]

object RecordOrder:

  /** One record of a partition at a time, in offset order (a plain consumer's order). */
  val byPartition: RecordOrder[Any, Any] = ByKeyOf[Any, Any, TopicPartition](r => r.topicPartition)

  /**
   * One record of each record key at a time, in offset order; different keys of one partition run
   * concurrently. Keys are told apart by their bytes as the broker holds them, not by the decoded key's
   * `equals` (an `Array[Byte]` key has none worth the name). Records with a `null` key share one key per
   * partition.
   */
  val byKey: RecordOrder[Any, Any] = ByKeyOf[Any, Any, RawKey](_.rawKeyOrder)

  /**
   * One record of each `key(record)` of a partition at a time, in offset order. `key` should be pure and
   * cheap: the engine evaluates it as it takes a record from its buffer, possibly more than once.
   */
  def byKeyOf[K, V, A](key: KafkaRecord[K, V] => A): RecordOrder[K, V] =
    ByKeyOf[K, V, (TopicPartition, A)](r => (r.topicPartition, key(r)))

  private final case class ByKeyOf[K, V, A](key: KafkaRecord[K, V] => A) extends RecordOrder[K, V]:
    private[kafka] def taskOrder: TaskOrder[KafkaRecord[K, V]] = TaskOrder.byKey(key)
