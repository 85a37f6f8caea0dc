package weir.kafka.internal

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import org.apache.kafka.clients.consumer.{ConsumerConfig, CooperativeStickyAssignor}
import org.apache.kafka.clients.producer.ProducerConfig
import org.apache.kafka.common.KafkaException
import org.apache.kafka.common.serialization.Deserializer
import weir.kafka.KafkaSettings

import java.util.Properties
import scala.jdk.CollectionConverters.*

/** What a source gives the Kafka clients it runs: their properties, and the user's deserializers. */
private[kafka] object ClientProperties:

  /**
   * Configures the user's deserializers and closes them on release, as kafka-clients does with the ones it
   * builds itself (`Deserializers`): each is handed the consumer's properties and whether it decodes keys.
   * The same instance given for keys and values is closed once.
   */
  def deserializers[F[_], K, V](s: KafkaSettings, keys: Deserializer[K], values: Deserializer[V])(
      using F: Async[F]
  ): Resource[F, Unit] =
    val properties: java.util.Map[String, AnyRef] =
      consumerProperties(s).asScala.map((k, v) => k.toString -> v).asJava
    def configure(d: Deserializer[?], isKey: Boolean): F[Unit] =
      val role = if isKey then "key" else "value"
      F.blocking(d.configure(properties, isKey)).whenA(s.configureDeserializers).adaptError(e =>
        new KafkaException(
          s"the $role deserializer (${d.getClass.getName}) refused the consumer's properties: ${e.getMessage}",
          e
        )
      )
    def owned(d: Deserializer[?], isKey: Boolean): Resource[F, Unit] =
      Resource.make(configure(d, isKey).onError(_ => F.blocking(d.close()).attempt.void))(_ =>
        F.blocking(d.close())
      )
    owned(keys, isKey = true) *>
      (if (values: AnyRef) eq keys then Resource.eval(configure(values, isKey = false))
       else owned(values, isKey = false))

  def consumerProperties(s: KafkaSettings): Properties =
    val p = new Properties
    // cooperative-sticky unless the user chose otherwise (or the consumer protocol, which takes no assignor)
    if !s.properties.contains(ConsumerConfig.GROUP_PROTOCOL_CONFIG) then
      p.setProperty(
        ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
        classOf[CooperativeStickyAssignor].getName
      ): Unit
    p.setProperty(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"): Unit
    p.setProperty(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, math.min(500, s.maxInFlight).toString): Unit
    s.properties.foreach((k, v) => p.setProperty(k, v): Unit)
    p.setProperty(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, s.bootstrapServers): Unit
    p.setProperty(ConsumerConfig.GROUP_ID_CONFIG, s.groupId): Unit
    p.setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false"): Unit
    p

  /** The user's properties a producer knows (security, client id, ...), all acks, the same servers. */
  def producerProperties(s: KafkaSettings): Properties =
    val p = new Properties
    val known = ProducerConfig.configNames()
    s.properties.foreach((k, v) => if known.contains(k) then p.setProperty(k, v): Unit)
    if !s.properties.contains(ProducerConfig.ACKS_CONFIG) then
      p.setProperty(ProducerConfig.ACKS_CONFIG, "all"): Unit
    p.setProperty(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, s.bootstrapServers): Unit
    p
