package weir.lab.kafka

import cats.effect.{IO, Resource}
import org.apache.kafka.clients.consumer.{ConsumerConfig, CooperativeStickyAssignor}
import org.apache.kafka.common.serialization.StringDeserializer

import java.util.Properties

/** The consumers `./weir lab kafka` compares, each run in a consumer JVM on the same handler. */
enum Approach(val name: String, val label: String):

  /** weir's `KafkaSource` feeding a `Pipeline`, records of one key in offset order ([[WeirConsumer]]). */
  case Weir extends Approach("weir", "weir KafkaSource, byKey")

  /** A plain `kafka-clients` poll loop, each partition's records in order on a thread of its own ([[PlainLoop]]). */
  case Plain extends Approach("plain", "kafka-clients loop, per partition")

  /**
   * One FS2 stream per partition run in parallel, the shape of fs2-kafka's `partitionedStream` with
   * `parEvalMap` per partition, written over kafka-clients ([[PartitionStreams]]): fs2-kafka itself is not
   * served by this machine's package registry.
   */
  case Streams
      extends Approach("fs2", "fs2 per-partition streams (fs2-kafka's shape; fs2-kafka not served here)")

object Approach:
  def named(name: String): Option[Approach] = values.find(_.name == name)

/**
 * What a consumer JVM runs: the topic, its group, the handler (`sleepMillis`, 0 for none), the poll timeout
 * every approach polls with (`pollMillis`) and, for weir, the pipeline's limit and the records its source
 * holds at most.
 */
final case class ConsumerSettings(
    bootstrap: String,
    topic: String,
    group: String,
    sleepMillis: Int,
    limit: Int,
    maxInFlight: Int,
    pollMillis: Int
):

  /**
   * The properties every approach's consumer shares: the cooperative-sticky assignor weir's source uses,
   * offsets committed by the approach, and a short session, so that a SIGKILLed consumer's partitions move
   * within seconds.
   */
  def properties: Map[String, String] = Map(
    ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG -> classOf[CooperativeStickyAssignor].getName,
    ConsumerConfig.AUTO_OFFSET_RESET_CONFIG -> "earliest",
    ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG -> "3000",
    ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG -> "500"
  )

  def javaProperties: Properties =
    val p = new Properties
    properties.foreach((k, v) => p.setProperty(k, v): Unit)
    p.setProperty(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap): Unit
    p.setProperty(ConsumerConfig.GROUP_ID_CONFIG, group): Unit
    p.setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false"): Unit
    p.setProperty(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, classOf[StringDeserializer].getName): Unit
    p.setProperty(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, classOf[StringDeserializer].getName): Unit
    p

/** A consumer running in this JVM; `revocations` counts the partitions taken from it so far, where known. */
trait Consuming:
  def revocations: IO[Long]

object Consuming:
  def resource(approach: Approach, s: ConsumerSettings, recorder: Recorder): Resource[IO, Consuming] =
    approach match
      case Approach.Weir => WeirConsumer.resource(s, recorder)
      case Approach.Plain => PlainLoop.resource(s, recorder)
      case Approach.Streams => PartitionStreams.resource(s, recorder)
