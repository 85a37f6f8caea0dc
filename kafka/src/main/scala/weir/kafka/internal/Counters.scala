package weir.kafka.internal

import org.apache.kafka.common.TopicPartition
import weir.kafka.KafkaStats

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.{AtomicBoolean, AtomicInteger, AtomicLong}
import scala.jdk.CollectionConverters.*

/** A source's counters, written by the poller and the outcome readers, read by [[weir.kafka.KafkaStats]]. */
private[kafka] final class Counters:
  /** Records held: received and not yet in a finished prefix (nor given up with their partition). */
  val held = new AtomicInteger

  /** Outcomes known (their records finished or not) and not yet read from the source's outcome stream. */
  val unread = new AtomicInteger
  val paused = new AtomicBoolean
  val received = new AtomicLong
  val undecodable = new AtomicLong
  val skipped = new AtomicLong
  val deadLettered = new AtomicLong
  val deadLetterFailures = new AtomicLong
  val commits = new AtomicLong
  val commitRounds = new AtomicLong
  val commitFailures = new AtomicLong
  val revoked = new AtomicLong
  val interrupted = new AtomicLong
  val committed = new ConcurrentHashMap[TopicPartition, java.lang.Long]

  /** The end offset of each partition owned now, as the poller last saw it (see [[KafkaStats.endOffsets]]). */
  val endOffsets = new ConcurrentHashMap[TopicPartition, java.lang.Long]

  def stats: KafkaStats =
    KafkaStats(
      received = received.get,
      undecodable = undecodable.get,
      skipped = skipped.get,
      deadLettered = deadLettered.get,
      deadLetterFailures = deadLetterFailures.get,
      commits = commits.get,
      commitRounds = commitRounds.get,
      commitFailures = commitFailures.get,
      revoked = revoked.get,
      interrupted = interrupted.get,
      held = held.get,
      unread = unread.get,
      paused = paused.get,
      committed = committed.asScala.map((tp, o) => tp -> o.longValue).toMap,
      endOffsets = endOffsets.asScala.map((tp, o) => tp -> o.longValue).toMap
    )
