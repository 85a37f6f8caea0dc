package weir.otel

/**
 * The metrics [[KafkaMetrics]] exports, beside [[MetricNames]]' engine metrics, named after OpenTelemetry's
 * messaging conventions where one fits (`messaging.client.consumed.messages`, and the attributes), under
 * `weir.kafka.` otherwise. Every metric carries `messaging.system` (`kafka`) and
 * `messaging.consumer.group.name`; the counters are cumulative and summed over the sources of one group in
 * this process (ended ones included), the others are the sources' going on.
 *
 * | metric | instrument | unit | attributes | what |
 * |---|---|---|---|---|
 * | `messaging.client.consumed.messages` | counter | `{message}` | group | records received and decoded, handed to the pipeline |
 * | `weir.kafka.undecodable` | counter | `{message}` | group | records the deserializers rejected |
 * | `weir.kafka.skipped` | counter | `{message}` | group | records an earlier reader had finished (commit metadata) |
 * | `weir.kafka.dead_lettered` | counter | `{message}` | group | records written to the dead-letter topic |
 * | `weir.kafka.dead_letter_failures` | counter | `{message}` | group | dead-letter writes failed after their retries |
 * | `weir.kafka.commits` | counter | `{commit}` | group | offset commits that succeeded |
 * | `weir.kafka.commit_failures` | counter | `{commit}` | group | offset commits that failed (the next one retries) |
 * | `weir.kafka.commit_rounds` | counter | `{round}` | group | times the poller looked for finished prefixes to commit |
 * | `weir.kafka.revoked` | counter | `{partition}` | group | partitions revoked or lost |
 * | `weir.kafka.interrupted` | counter | `{message}` | group | running records interrupted by a revoke |
 * | `weir.kafka.held` | up-down counter | `{message}` | group | records held now (received, not yet in a committed prefix) |
 * | `weir.kafka.unread` | up-down counter | `{message}` | group | outcomes known and not yet read |
 * | `weir.kafka.paused` | up-down counter | `{source}` | group | sources whose partitions are paused now |
 * | `weir.kafka.consumer.lag` | gauge | `{message}` | group, `messaging.destination.name`, `messaging.destination.partition.id` | end offset − committed offset of each partition owned now |
 */
object KafkaMetricNames:
  val Consumed = "messaging.client.consumed.messages"
  val Undecodable = "weir.kafka.undecodable"
  val Skipped = "weir.kafka.skipped"
  val DeadLettered = "weir.kafka.dead_lettered"
  val DeadLetterFailures = "weir.kafka.dead_letter_failures"
  val Commits = "weir.kafka.commits"
  val CommitFailures = "weir.kafka.commit_failures"
  val CommitRounds = "weir.kafka.commit_rounds"
  val Revoked = "weir.kafka.revoked"
  val Interrupted = "weir.kafka.interrupted"
  val Held = "weir.kafka.held"
  val Unread = "weir.kafka.unread"
  val Paused = "weir.kafka.paused"
  val Lag = "weir.kafka.consumer.lag"

  val System = "messaging.system"
  val Group = "messaging.consumer.group.name"
  val Topic = "messaging.destination.name"
  val Partition = "messaging.destination.partition.id"
