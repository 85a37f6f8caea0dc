package weir.kafka.internal

import org.apache.kafka.common.TopicPartition

import java.util.Arrays

/**
 * A record's key as [[weir.kafka.RecordOrder.byKey]] tells keys apart: its partition and its bytes as the
 * broker holds them (`null` for a record without a key, which is one key per partition, apart from the
 * empty key). Built once per record, on the poller thread, with its hash: the engine hashes and compares a
 * record's key each time it takes the record or hands its key on, on the pipeline's threads.
 */
private[kafka] final class RawKey(val partition: TopicPartition, val bytes: Array[Byte]):

  override val hashCode: Int = partition.hashCode * 31 + Arrays.hashCode(bytes)

  override def equals(other: Any): Boolean =
    other match
      case k: RawKey =>
        (k eq this) || (k.hashCode == hashCode && k.partition == partition && Arrays.equals(k.bytes, bytes))
      case _ => false

  override def toString: String =
    s"RawKey($partition, ${if bytes == null then "null" else s"${bytes.length} bytes"})"
