package weir.kafka

import munit.FunSuite
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.header.internals.RecordHeaders
import weir.TaskOrder
import weir.kafka.internal.{Counters, PartitionState}

class RecordOrderSuite extends FunSuite:

  private val state = new PartitionState(new TopicPartition("t", 0), new Counters)
  private val other = new PartitionState(new TopicPartition("t", 1), new Counters)

  private def record(key: Array[Byte], in: PartitionState = state, offset: Long = 0L) =
    KafkaRecord(
      "t",
      in.partition.partition,
      offset,
      0L,
      key,
      "v",
      new RecordHeaders,
      key,
      Array.emptyByteArray,
      in.receive(offset)
    )

  private def keyOf(order: RecordOrder[Array[Byte], String]): KafkaRecord[Array[Byte], String] => Any =
    order.taskOrder match
      case TaskOrder.ByKey(f) => f
      case other => fail(s"expected a per-key order, got $other")

  test("byKey tells keys apart by their bytes, not by the decoded key's equals, within each partition") {
    val key = keyOf(RecordOrder.byKey)
    // two arrays with the same bytes: equal keys although `Array.equals` is identity
    assertEquals(key(record("user-1".getBytes)), key(record("user-1".getBytes, offset = 1L)))
    assertNotEquals(key(record("user-1".getBytes)), key(record("user-2".getBytes)))
    assertNotEquals(key(record("user-1".getBytes)), key(record("user-1".getBytes, in = other)))
    // a null key is one key per partition
    assertEquals(key(record(null)), key(record(null, offset = 1L)))
    assertNotEquals(key(record(null)), key(record(null, in = other)))
    assertNotEquals(key(record(null)), key(record(Array.emptyByteArray)))
  }

  test("byKey's equal keys hash alike, and one record's key is made once, however often it is asked") {
    val key = keyOf(RecordOrder.byKey)
    assertEquals(key(record("user-1".getBytes)).##, key(record("user-1".getBytes, offset = 1L)).##)
    assertEquals(key(record(null)).##, key(record(null, offset = 1L)).##)
    val r = record("user-1".getBytes)
    assert(key(r).asInstanceOf[AnyRef] eq key(r).asInstanceOf[AnyRef])
  }
