package weir.kafka

import cats.effect.unsafe.implicits.global
import cats.effect.{IO, Resource}
import org.apache.kafka.clients.admin.{Admin, AdminClientConfig}
import org.apache.kafka.clients.consumer.OffsetAndMetadata
import org.apache.kafka.clients.producer.{KafkaProducer, ProducerConfig, ProducerRecord}
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.StringSerializer
import weir.testkit.KafkaBroker

import java.util.Properties
import java.util.concurrent.atomic.AtomicInteger
import scala.jdk.CollectionConverters.*

/**
 * The broker the suites run against: weir-testkit's shared broker, one KRaft node started in this JVM the
 * first time a suite asks for it and stopped when the JVM exits. Every test uses topics and groups of its
 * own, so suites never see each other's records.
 */
object TestBroker:

  private lazy val broker: KafkaBroker[IO] = KafkaBroker.shared[IO].unsafeRunSync()

  /**
   * Stops the broker and starts it again, as a restart of its process would; its listeners keep their
   * ports. Returns once a new topic gets a leader again. Every suite shares this broker: a test that
   * restarts it must leave it serving.
   */
  def restart: IO[Unit] = broker.restart

  /** The broker's address. */
  lazy val bootstrap: String = broker.bootstrapServers

  private val names = new AtomicInteger

  /** A name no other test uses. */
  def fresh(prefix: String): String = s"$prefix-${ProcessHandle.current().pid()}-${names.incrementAndGet()}"

  lazy val admin: Admin =
    val props = new Properties
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap)
    Admin.create(props)

  /** A new topic of `partitions` partitions, once every partition has its leader. */
  def topic(partitions: Int, prefix: String = "t"): IO[String] =
    val name = fresh(prefix)
    broker.createTopic(name, partitions).as(name)

  private lazy val producer: KafkaProducer[String, String] =
    val props = broker.producerProperties
    props.put(ProducerConfig.LINGER_MS_CONFIG, "5")
    new KafkaProducer(props, new StringSerializer, new StringSerializer)

  /** Writes `records` (partition, key, value) in this order and waits for the broker's acknowledgement. */
  def produce(topic: String, records: Seq[(Int, String, String)]): IO[Unit] =
    IO.blocking {
      val sent = records.map((p, k, v) => producer.send(new ProducerRecord(topic, Int.box(p), k, v)))
      sent.foreach(_.get(40, java.util.concurrent.TimeUnit.SECONDS))
    }

  /** Writes raw bytes, for records no deserializer accepts. */
  def produceBytes(topic: String, partition: Int, key: Array[Byte], value: Array[Byte]): IO[Unit] =
    IO.blocking {
      val props = new Properties
      props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap)
      val p = new KafkaProducer(
        props,
        new org.apache.kafka.common.serialization.ByteArraySerializer,
        new org.apache.kafka.common.serialization.ByteArraySerializer
      )
      try p.send(new ProducerRecord(topic, Int.box(partition), key, value)).get()
      finally p.close()
    }.void

  /** The group's committed offsets, as the broker has them. */
  def committed(group: String): IO[Map[TopicPartition, Long]] =
    IO.blocking(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get())
      .map(_.asScala.collect { case (tp, om: OffsetAndMetadata) => tp -> om.offset }.toMap)

  /** A broker-side resource wrapper for tests that want their topic created inside a `Resource`. */
  def topicResource(partitions: Int): Resource[IO, String] = Resource.eval(topic(partitions))
