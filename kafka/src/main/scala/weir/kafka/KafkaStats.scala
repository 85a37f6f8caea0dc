package weir.kafka

import org.apache.kafka.common.TopicPartition

/**
 * What a [[KafkaSource]] did so far.
 *
 * @param received records received and decoded (handed to the pipeline)
 * @param undecodable records the deserializers rejected (dead-lettered, or skipped without a topic)
 * @param skipped records received that an earlier reader had finished above its commit, as the commit's
 *   metadata said: not handed to the pipeline
 * @param deadLettered records written to the dead-letter topic (undecodable or failed for good)
 * @param deadLetterFailures dead-letter writes that failed for good, after their retries (those records stay
 *   unfinished, and the source fails)
 * @param commits successful commits; `commitFailures` those that failed (the next one retries)
 * @param commitRounds times the poller looked for finished prefixes to commit (every `commitEvery`)
 * @param revoked partitions revoked or lost; `interrupted` running records interrupted by a revoke
 * @param held records held now (see [[KafkaSettings.maxInFlight]]); `paused` whether the partitions are
 * @param unread outcomes known and not yet read from [[KafkaSource.outcomes]] (they count against
 *   [[KafkaSettings.maxInFlight]] too)
 * @param committed the last offset committed per partition: by this consumer, or, until it commits one,
 *   the group's commit it found when the partition was assigned (an offset committed is the next to read)
 * @param endOffsets the end offset (the high watermark: the offset the next record written gets) of each
 *   partition this consumer owns now, as last seen: from each fetch's response while the partition is
 *   fetched, and asked of the broker once per `commitEvery` while it is paused; absent until known
 */
final case class KafkaStats(
    received: Long,
    undecodable: Long,
    skipped: Long,
    deadLettered: Long,
    deadLetterFailures: Long,
    commits: Long,
    commitRounds: Long,
    commitFailures: Long,
    revoked: Long,
    interrupted: Long,
    held: Int,
    unread: Int,
    paused: Boolean,
    committed: Map[TopicPartition, Long],
    endOffsets: Map[TopicPartition, Long]
):

  /**
   * The consumer lag of each partition this consumer owns whose end and committed offsets are known: the
   * records written to it and not yet committed by the group (end offset − committed offset, at least 0).
   * Records received and running, or finished above a record still running, count in it until committed.
   */
  def lag: Map[TopicPartition, Long] =
    endOffsets.flatMap((tp, end) => committed.get(tp).map(c => tp -> math.max(0L, end - c)))
