package weir.kafka

import cats.effect.{IO, Resource}
import org.apache.kafka.clients.admin.{Admin, AdminClientConfig, NewTopic}
import org.apache.kafka.clients.consumer.OffsetAndMetadata
import org.apache.kafka.clients.producer.{KafkaProducer, ProducerConfig, ProducerRecord}
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.StringSerializer
import org.apache.kafka.common.test.{KafkaClusterTestKit, TestKitNodes}
import org.apache.kafka.common.utils.Exit

import java.util.Properties
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.atomic.AtomicInteger
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

/**
 * The broker the suites run against: one KRaft node, broker and controller in one, started in this JVM by
 * Kafka's own test kit the first time a suite asks for it, and stopped when the JVM exits. Every test uses
 * topics and groups of its own, so suites never see each other's records.
 */
object TestBroker:

  // The test kit registers a JVM shutdown hook for each temporary directory it makes, which deletes it. The
  // JVM runs its shutdown hooks at once, so those would delete the broker's log directories while the hook
  // below shuts the broker down; a broker whose log directories all fail halts the JVM, and the test JVM
  // would end with status 1 after every test passed. The kit's hooks are kept here instead, and run once the
  // broker is closed. A halt or exit the broker asks for is reported, not obeyed: the broker is a fixture,
  // and a test that needs it fails on its own.
  private val laterHooks = new ConcurrentLinkedQueue[Runnable]

  private lazy val cluster: KafkaClusterTestKit =
    Exit.setShutdownHookAdder((_, hook) => laterHooks.add(hook): Unit)
    val reported: Exit.Procedure = (status, message) =>
      System.err.println(s"TestBroker: the broker asked to end the JVM (status $status: $message); ignored")
    Exit.setHaltProcedure(reported)
    Exit.setExitProcedure(reported)
    val nodes =
      new TestKitNodes.Builder().setCombined(true).setNumBrokerNodes(1).setNumControllerNodes(1).build()
    val kit = new KafkaClusterTestKit.Builder(nodes)
      // a group forms at once instead of waiting for more members (the broker's default waits 3 s)
      .setConfigProp("group.initial.rebalance.delay.ms", "0")
      .setConfigProp("offsets.topic.replication.factor", "1")
      .setConfigProp("offsets.topic.num.partitions", "1")
      .setConfigProp("transaction.state.log.replication.factor", "1")
      .setConfigProp("group.consumer.heartbeat.interval.ms", "500")
      .setConfigProp("group.consumer.min.heartbeat.interval.ms", "100")
      .build()
    kit.format()
    kit.startup()
    kit.waitForReadyBrokers()
    sys.addShutdownHook {
      try kit.close()
      finally laterHooks.forEach(_.run())
    }: Unit
    kit

  /**
   * Stops the broker and starts it again, as a restart of its process would; its listeners keep their
   * ports (the test kit binds them once). Returns once a new topic gets a leader again. Every suite shares
   * this broker: a test that restarts it must leave it serving.
   */
  def restart: IO[Unit] =
    IO.blocking {
      val broker = cluster.brokers().values().iterator().next()
      broker.shutdown()
      broker.startup()
    } *> topic(1, "after-restart").void

  /** The broker's address. */
  lazy val bootstrap: String = cluster.bootstrapServers()

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
    val led = IO.blocking(admin.describeTopics(List(name).asJava).allTopicNames().get().get(name))
      .map(d => d.partitions.size == partitions && d.partitions.asScala.forall(_.leader != null))
      .handleError(_ => false)
    def ready(tries: Int): IO[Unit] = led.flatMap { ok =>
      if ok then IO.unit
      else if tries == 0 then IO.raiseError(new IllegalStateException(s"topic $name has no leaders"))
      else IO.sleep(20.millis) *> ready(tries - 1)
    }
    IO.blocking(admin.createTopics(List(new NewTopic(name, partitions, 1.toShort)).asJava).all().get()) *>
      ready(1500).as(name)

  private lazy val producer: KafkaProducer[String, String] =
    val props = new Properties
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap)
    props.put(ProducerConfig.LINGER_MS_CONFIG, "5")
    // a test's records fail its test within seconds rather than wait out the client's two-minute defaults
    props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000")
    props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000")
    props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000")
    // the plain protocol, one request in flight per connection: records keep their order per partition
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false")
    props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1")
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
