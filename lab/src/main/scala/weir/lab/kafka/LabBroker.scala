package weir.lab.kafka

import cats.effect.{IO, Resource}
import org.apache.kafka.clients.admin.{Admin, AdminClientConfig, NewTopic, OffsetSpec}
import org.apache.kafka.clients.consumer.OffsetAndMetadata
import org.apache.kafka.clients.producer.{KafkaProducer, ProducerConfig, ProducerRecord}
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.StringSerializer
import org.apache.kafka.common.test.{KafkaClusterTestKit, TestKitNodes}

import java.util.Properties
import java.util.concurrent.TimeUnit
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

/**
 * The broker of a `./weir lab kafka` run: one KRaft node, broker and controller in one, started in this JVM
 * by Kafka's own test kit, with the admin client and the producer the lab uses on it.
 */
final class LabBroker private (val bootstrap: String, admin: Admin, producer: KafkaProducer[String, String]):

  /** A new topic of `partitions` partitions, once every partition has its leader. */
  def topic(name: String, partitions: Int): IO[String] =
    val led = IO.blocking(admin.describeTopics(List(name).asJava).allTopicNames().get().get(name))
      .map(d => d.partitions.size == partitions && d.partitions.asScala.forall(_.leader != null))
      .handleError(_ => false)
    IO.blocking(admin.createTopics(List(new NewTopic(name, partitions, 1.toShort)).asJava).all().get()) *>
      (IO.sleep(20.millis) *> led).iterateUntil(identity).timeoutTo(
        30.seconds,
        IO.raiseError(new IllegalStateException(s"topic $name has no leaders after 30 s"))
      ).as(name)

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

  /** Starts the broker and its clients; released, stops them. */
  def resource: Resource[IO, LabBroker] =
    for
      kit <- Resource.make(IO.blocking {
        val nodes =
          new TestKitNodes.Builder().setCombined(true).setNumBrokerNodes(1).setNumControllerNodes(1).build()
        val kit = new KafkaClusterTestKit.Builder(nodes)
          // a group forms at once instead of waiting for more members (the broker's default waits 3 s)
          .setConfigProp("group.initial.rebalance.delay.ms", "0")
          // the consumers use a short session so that a SIGKILLed one's partitions move within seconds
          .setConfigProp("group.min.session.timeout.ms", "500")
          .setConfigProp("offsets.topic.replication.factor", "1")
          .setConfigProp("offsets.topic.num.partitions", "1")
          .setConfigProp("transaction.state.log.replication.factor", "1")
          .build()
        kit.format()
        kit.startup()
        kit.waitForReadyBrokers()
        kit
      })(kit => IO.blocking(kit.close()))
      bootstrap = kit.bootstrapServers()
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
    yield new LabBroker(bootstrap, admin, producer)
