package weir.testkit

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import org.apache.kafka.clients.admin.NewTopic
import org.apache.kafka.clients.producer.{KafkaProducer, ProducerConfig, ProducerRecord}
import org.apache.kafka.common.serialization.Serializer
import weir.testkit.internal.KraftCluster

import java.util.Properties
import java.util.concurrent.atomic.AtomicInteger
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

/**
 * A Kafka broker for tests: one KRaft node, broker and controller in one, started in this JVM by Kafka's own
 * test kit (`kafka-test-common-runtime`), no Docker. weir-testkit-kafka brings those dependencies; with
 * weir-testkit alone, add Kafka's test kit (`kafka-test-common-runtime`, `kafka_2.13`, `kafka-server`,
 * `kafka-metadata`, at your kafka-clients' version) to the test class path.
 *
 * The node is set up for tests ([[KafkaBroker.defaultProperties]]): a group forms at once, consumers may ask
 * for sessions down to 500 ms, every internal topic has one replica and one partition.
 *
 * Starting the first broker of a JVM changes two things in it: a halt or exit a broker asks for (after a
 * fatal error) is written to stderr and not obeyed, and the temporary directories Kafka's test kit deletes
 * at exit are deleted only after every broker still running is closed (otherwise a broker's log directories
 * vanish under it while it shuts down, and it halts the JVM).
 */
final class KafkaBroker[F[_]] private (cluster: KraftCluster)(using F: Async[F]):

  /** The broker's address, for `bootstrap.servers`. */
  def bootstrapServers: String = cluster.bootstrapServers

  /**
   * Creates the topic `name` with `partitions` partitions and one replica, and returns once every partition
   * has a leader (a consumer or producer may use it then). Fails if the topic exists, or with
   * [[Eventually.TimedOut]] if some partition has no leader `within`.
   */
  def createTopic(name: String, partitions: Int = 1, within: FiniteDuration = 30.seconds): F[Unit] =
    val led = F
      .blocking(cluster.admin.describeTopics(List(name).asJava).allTopicNames().get().get(name))
      .map(d => d.partitions.size == partitions && d.partitions.asScala.forall(_.leader != null))
      .handleError(_ => false)
    F.blocking(cluster.admin.createTopics(List(new NewTopic(name, partitions, 1.toShort)).asJava).all().get())
      .void *>
      Eventually.until(
        s"a leader for each of the $partitions partitions of topic $name",
        led,
        within,
        20.millis
      )(
        identity
      ).void

  /**
   * Writes `records` in this order with a producer of its own (all acknowledgements, one request in flight and
   * no idempotence, so that records of one partition keep their order), and returns once the broker
   * acknowledged every one.
   */
  def produce[K, V](records: Seq[ProducerRecord[K, V]], keys: Serializer[K], values: Serializer[V]): F[Unit] =
    Resource
      .make(F.blocking(new KafkaProducer[K, V](producerProperties, keys, values)))(p => F.blocking(p.close()))
      .use(p => F.blocking(records.map(p.send).foreach(_.get())))

  /**
   * The properties of a producer for this broker, as [[produce]] uses them (a new object each call, to add
   * to): the plain protocol with one request in flight, so that records of a partition keep their order
   * without the idempotent producer's id request, which this broker has been seen to leave unanswered; and
   * timeouts that fail a test's records within seconds rather than the client's two minutes.
   */
  def producerProperties: Properties =
    val props = new Properties
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers)
    props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false")
    props.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1")
    props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000")
    props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000")
    props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000")
    props

  /**
   * Stops the broker and starts it again, as a restart of its process would; its address stays valid.
   * Returns once a new topic gets a leader again (so it creates one, `weir-testkit-restart-<n>`).
   */
  def restart: F[Unit] =
    F.blocking(cluster.restart()) *>
      F.delay(KafkaBroker.restarts.incrementAndGet()).flatMap(n => createTopic(s"weir-testkit-restart-$n"))

  override def toString: String = s"KafkaBroker($bootstrapServers)"

object KafkaBroker:

  /** What each broker is started with, under the properties a caller gives: see [[KafkaBroker]]. */
  val defaultProperties: Map[String, String] = KraftCluster.defaults

  private val restarts = new AtomicInteger

  /**
   * A new broker with `properties` (broker settings, over [[defaultProperties]]); released, it is stopped and
   * its data deleted. Starting takes a few seconds.
   */
  def resource[F[_]](properties: Map[String, String] = Map.empty)(using
      F: Async[F]
  ): Resource[F, KafkaBroker[F]] =
    Resource
      .make(F.blocking(linked(KraftCluster.start(properties))))(c => F.blocking(c.close()))
      .map(new KafkaBroker[F](_))

  /**
   * The JVM's one broker, for suites that share it: started with [[defaultProperties]] by the first call and
   * stopped when the JVM exits. Each test should use topics and groups of its own; one that restarts it must
   * leave it serving.
   */
  def shared[F[_]](using F: Async[F]): F[KafkaBroker[F]] =
    F.blocking(linked(KraftCluster.shared)).map(new KafkaBroker[F](_))

  // a missing optional dependency shows as a class that cannot be loaded: say which artifacts they are
  private def linked[A](start: => A): A =
    try start
    catch
      case e: NoClassDefFoundError =>
        throw new IllegalStateException(
          "a Kafka broker needs Kafka's test kit on the class path (weir-testkit-kafka brings it): " +
            s"kafka-test-common-runtime, kafka_2.13, kafka-server, kafka-metadata; missing: ${e.getMessage}",
          e
        )
