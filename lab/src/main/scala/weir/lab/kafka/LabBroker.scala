package weir.lab.kafka

import cats.effect.{IO, Resource}
import org.apache.kafka.clients.admin.{Admin, AdminClientConfig, OffsetSpec}
import org.apache.kafka.clients.consumer.OffsetAndMetadata
import org.apache.kafka.clients.producer.{KafkaProducer, ProducerConfig, ProducerRecord}
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.StringSerializer
import weir.testkit.KafkaBroker

import java.util.Properties
import java.util.concurrent.TimeUnit
import scala.jdk.CollectionConverters.*

/**
 * The broker of a `./weir lab kafka` run: weir-testkit's KRaft node, broker and controller in one, started in
 * this JVM by Kafka's own test kit, with the admin client and the producer the lab uses on it.
 */
final class LabBroker private (
    broker: KafkaBroker[IO],
    admin: Admin,
    producer: KafkaProducer[String, String]
):

  /** The broker's address. */
  val bootstrap: String = broker.bootstrapServers

  /** A new topic of `partitions` partitions, once every partition has its leader (within 30 s). */
  def topic(name: String, partitions: Int): IO[String] = broker.createTopic(name, partitions).as(name)

  /**
   * Writes `n` records to `topic`: record `i` has key `k<i mod (partitions × keys)>`, and key `k` goes to
   * partition `k mod partitions`, so that each partition holds `keys` keys, in turn. Waits for every
   * acknowledgement.
   */
  def fill(topic: String, n: Int, partitions: Int, keys: Int): IO[Unit] =
    IO.blocking {
      val all = partitions * keys
      val sent = (0 until n).map { i =>
        val k = i % all
        producer.send(new ProducerRecord(topic, Int.box(k % partitions), s"k$k", i.toString))
      }
      producer.flush()
      sent.foreach(_.get(60, TimeUnit.SECONDS))
    }.void

  /** Writes `records` (key, value) to `topic`, partitioned by key, and waits for every acknowledgement. */
  def send(topic: String, records: Seq[(String, String)]): IO[Unit] =
    IO.blocking {
      val sent = records.map((k, v) => producer.send(new ProducerRecord(topic, k, v)))
      sent.foreach(_.get(60, TimeUnit.SECONDS))
    }.void

  /** Each partition's end offset (the offset the next record will get). */
  def ends(topic: String, partitions: Int): IO[Map[Int, Long]] =
    IO.blocking {
      val asked = (0 until partitions).map(p => new TopicPartition(topic, p) -> OffsetSpec.latest()).toMap
      admin.listOffsets(asked.asJava).all().get().asScala.map((tp, info) => tp.partition -> info.offset).toMap
    }

  /** The group's committed offsets by partition, as the broker has them. */
  def committed(group: String): IO[Map[Int, Long]] =
    IO.blocking(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get())
      .map(_.asScala.collect { case (tp, om: OffsetAndMetadata) => tp.partition -> om.offset }.toMap)

object LabBroker:

  /**
   * Starts the broker and its clients; released, stops them. The consumers use a short session, so that a
   * SIGKILLed one's partitions move within seconds: the test kit's broker accepts sessions from 500 ms.
   */
  def resource: Resource[IO, LabBroker] =
    for
      broker <- KafkaBroker.resource[IO]()
      bootstrap = broker.bootstrapServers
      admin <- Resource.make(IO.blocking {
        val props = new Properties
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap)
        Admin.create(props)
      })(a => IO.blocking(a.close()))
      producer <- Resource.make(IO.blocking {
        val props = new Properties
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap)
        props.put(ProducerConfig.LINGER_MS_CONFIG, "10")
        props.put(ProducerConfig.BATCH_SIZE_CONFIG, (256 * 1024).toString)
        // the plain protocol: the idempotent producer's id request went unanswered by the test kit's broker
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false")
        props.put(ProducerConfig.ACKS_CONFIG, "1")
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000")
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000")
        new KafkaProducer(props, new StringSerializer, new StringSerializer)
      })(p => IO.blocking(p.close()))
    yield new LabBroker(broker, admin, producer)
