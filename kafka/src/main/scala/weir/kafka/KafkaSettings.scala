package weir.kafka

import weir.{Retry, Validation}

import scala.concurrent.duration.*

/**
 * Where a [[KafkaSource]] reads from and how it holds its records. Build it with named arguments; building
 * or copying never throws: every value is checked when the source starts ([[KafkaSettings.errors]]), and
 * bad ones fail [[KafkaSource.start]] with one [[weir.InvalidSettings]] naming each of them.
 *
 * @param bootstrapServers the brokers, `host:port[,host:port…]`
 * @param groupId the consumer group: the consumers of one group share the topics' partitions
 * @param topics the topics to read, at least one
 * @param maxInFlight how many records the source holds at most (received and not yet in a partition's
 *   committed prefix: queued, running, or finished above a slower record; or whose outcome is not read
 *   yet from [[KafkaSource.outcomes]]), over all partitions; past it
 *   every partition is paused (the consumer goes on polling, so it stays in the group) until records
 *   finish. This, not the number of keys or partitions, bounds the source's memory (one poll's
 *   `max.poll.records` may go past it once)
 * @param pollTimeout how long one `poll` waits for records
 * @param commitEvery how often the finished prefixes are committed (also on revoke and on release)
 * @param revokeGrace how long the running records of a revoked partition may go on before they are
 *   interrupted; the revoke then waits as long again for them to end
 * @param deadLetterTopic where undecodable records, and records that failed for good, are written
 * @param deadLetterRetry how a failed dead-letter write is retried; once its attempts are spent the record
 *   stays unfinished (its offset is never committed) and the source fails with an error naming the topic
 * @param commitMetadataBytes the most bytes of commit metadata, which names the records finished above
 *   the committed offset so that the next reader skips them; at most the brokers'
 *   `offset.metadata.max.bytes` (4096 by default); 0 commits no metadata
 * @param properties any other consumer (and dead-letter producer) property; those the source owns
 *   (deserializers, `enable.auto.commit`, `group.id`, `bootstrap.servers`) are overridden. They reach the
 *   deserializers' `configure` too (a schema registry's URL, say). `auto.offset.reset` is `earliest` unless
 *   set here (Kafka's own default is `latest`): a group without a committed offset, new or whose offsets
 *   expired, runs the records already in the topic rather than skipping them
 * @param configureDeserializers whether the source calls the deserializers' `configure(properties, isKey)`
 *   with the consumer's properties before the first record, as kafka-clients does with the deserializers it
 *   builds from class names; false for instances configured already, which a second `configure` would
 *   reset. Either way the source closes them on release
 */
final case class KafkaSettings(
    bootstrapServers: String,
    groupId: String,
    topics: List[String],
    maxInFlight: Int = KafkaSettings.Defaults.maxInFlight,
    pollTimeout: FiniteDuration = KafkaSettings.Defaults.pollTimeout,
    commitEvery: FiniteDuration = KafkaSettings.Defaults.commitEvery,
    revokeGrace: FiniteDuration = KafkaSettings.Defaults.revokeGrace,
    deadLetterTopic: Option[String] = None,
    deadLetterRetry: Retry = KafkaSettings.Defaults.deadLetterRetry,
    commitMetadataBytes: Int = KafkaSettings.Defaults.commitMetadataBytes,
    properties: Map[String, String] = Map.empty,
    configureDeserializers: Boolean = true
):

  /** What is wrong with these settings, each bad value named (`deadLetterRetry`'s included); empty if valid. */
  def errors: List[String] =
    Validation.check(
      bootstrapServers != null && bootstrapServers.trim.nonEmpty,
      s"bootstrapServers must not be empty, was: '$bootstrapServers'"
    ) ++
      Validation.check(
        groupId != null && groupId.trim.nonEmpty,
        s"groupId must not be empty, was: '$groupId'"
      ) ++
      Validation.check(
        topics != null && topics.nonEmpty,
        s"topics must name at least one topic, was: $topics"
      ) ++
      Option(topics).toList.flatten.flatMap(t =>
        Validation.check(t != null && t.trim.nonEmpty, s"topic names must not be empty, was: '$t' in $topics")
      ) ++
      Validation.check(maxInFlight > 0, s"maxInFlight must be > 0, was: $maxInFlight") ++
      Validation.check(pollTimeout > Duration.Zero, s"pollTimeout must be > 0, was: $pollTimeout") ++
      Validation.check(commitEvery > Duration.Zero, s"commitEvery must be > 0, was: $commitEvery") ++
      Validation.check(revokeGrace >= Duration.Zero, s"revokeGrace must be >= 0, was: $revokeGrace") ++
      deadLetterTopic.toList.flatMap(t =>
        Validation.check(
          t != null && t.trim.nonEmpty,
          s"deadLetterTopic must not be empty when set, was: '$t'"
        )
      ) ++
      Validation.nested("deadLetterRetry", deadLetterRetry.errors) ++
      Validation.check(
        commitMetadataBytes >= 0,
        s"commitMetadataBytes must be >= 0, was: $commitMetadataBytes"
      )

object KafkaSettings:
  object Defaults:
    val maxInFlight: Int = 1000
    val pollTimeout: FiniteDuration = 50.millis
    val commitEvery: FiniteDuration = 1.second
    val revokeGrace: FiniteDuration = 5.seconds
    val deadLetterRetry: Retry = Retry.exponential(100.millis, maxAttempts = 5, maxDelay = 5.seconds)
    val commitMetadataBytes: Int = 4096
