package weir.kafka.internal

import org.apache.kafka.clients.consumer.{KafkaConsumer, OffsetAndMetadata}
import org.apache.kafka.common.{KafkaException, TopicPartition}
import weir.kafka.KafkaSettings

import java.time.Duration as JDuration
import scala.collection.mutable
import scala.jdk.CollectionConverters.*

/**
 * The offsets the poller deals in, on its thread (the consumer is not thread-safe): what it commits for
 * each partition, and the end offsets it publishes in [[Counters.endOffsets]] for the source's lag.
 */
private[kafka] final class Offsets(
    consumer: KafkaConsumer[Array[Byte], Array[Byte]],
    settings: KafkaSettings,
    counters: Counters
):
  // the last commit of each partition owned: a commit point that did not move is not committed again
  private val lastCommitted = mutable.HashMap.empty[TopicPartition, (Long, String)]
  private val endOffsetsTimeout =
    JDuration.ofNanos(math.min(settings.commitEvery.toNanos, 1000000000L))

  /** A partition given up: nothing is remembered of it. */
  def forget(tp: TopicPartition): Unit =
    lastCommitted.remove(tp): Unit
    counters.endOffsets.remove(tp): Unit

  /**
   * The end offsets of the owned partitions that are fetched, from what the last fetch said (the consumer's
   * position plus its lag to the high watermark, both local): nothing is asked of the broker.
   */
  def publishEndOffsets(owned: collection.Set[TopicPartition], paused: java.util.Set[TopicPartition]): Unit =
    owned.foreach { tp =>
      if !paused.contains(tp) then
        val lag = consumer.currentLag(tp)
        if lag.isPresent then
          try counters.endOffsets.put(tp, consumer.position(tp, JDuration.ZERO) + lag.getAsLong): Unit
          catch case _: KafkaException => ()
    }

  /**
   * A paused partition is not fetched, so its end offset would stay what the last fetch saw while records
   * keep coming: once per commit round, the broker is asked for the paused ones' (one request, on this
   * thread, for at most a second; one that fails leaves the last known).
   */
  def refreshEndOffsets(owned: collection.Set[TopicPartition], paused: java.util.Set[TopicPartition]): Unit =
    val stale = owned.iterator.filter(paused.contains).toVector
    if stale.nonEmpty then
      try
        consumer.endOffsets(stale.asJava, endOffsetsTimeout).forEach { (tp, end) =>
          if end != null && owned.contains(tp) then counters.endOffsets.put(tp, end.longValue): Unit
        }
      catch case _: KafkaException => ()

  /**
   * Commits the finished prefix of each of `states`, and the finished records above it, if they changed;
   * what happened, if a commit was due.
   */
  def commit(states: Iterable[PartitionState]): Option[Poller.Event] =
    val due = states.flatMap { s =>
      s.commitPoint(settings.commitMetadataBytes)
        .filter(point => !lastCommitted.get(s.partition).contains(point))
        .map(s.partition -> _)
    }.toMap
    if due.nonEmpty then
      try
        consumer.commitSync(due.map((tp, point) => tp -> new OffsetAndMetadata(point._1, point._2)).asJava)
        due.foreach { (tp, point) =>
          lastCommitted(tp) = point
          counters.committed.put(tp, point._1)
        }
        counters.commits.incrementAndGet(): Unit
        Some(Poller.Event.Committed)
      catch
        // the group moved on (a rebalance, a fenced member) or the broker is away: the next commit retries,
        // and a partition lost meanwhile is re-read by its next owner from its last commit
        case e: KafkaException =>
          counters.commitFailures.incrementAndGet(): Unit
          Some(Poller.Event.CommitFailed(e))
    else None
