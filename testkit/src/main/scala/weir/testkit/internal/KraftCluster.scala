package weir.testkit.internal

import org.apache.kafka.clients.admin.{Admin, AdminClientConfig}
import org.apache.kafka.common.test.{KafkaClusterTestKit, TestKitNodes}
import org.apache.kafka.common.utils.Exit

import java.util.Properties
import java.util.concurrent.{ConcurrentHashMap, ConcurrentLinkedQueue}

/**
 * One KRaft node, broker and controller in one, started in this JVM by Kafka's own test kit, with an admin
 * client on it. `close` stops both, once; `restart` stops the broker and starts it again (its listeners keep
 * their ports: the test kit binds them once). Both are serialized with each other.
 */
private[testkit] final class KraftCluster private (kit: KafkaClusterTestKit):
  private var closed = false

  val bootstrapServers: String = kit.bootstrapServers()

  lazy val admin: Admin =
    val props = new Properties
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers)
    Admin.create(props)

  def restart(): Unit = synchronized {
    if closed then throw new IllegalStateException(s"the broker at $bootstrapServers was stopped for good")
    // reached by reflection: the signatures of the kit's BrokerServer name classes that kafka_2.13 keeps in
    // its runtime scope, so code that names the type would need a dozen more artifacts to compile
    val broker = kit.getClass.getMethod("brokers").invoke(kit).asInstanceOf[java.util.Map[?, ?]]
      .values().iterator().next().asInstanceOf[AnyRef]
    def call(method: String): Unit =
      try broker.getClass.getMethod(method).invoke(broker): Unit
      catch case e: java.lang.reflect.InvocationTargetException => throw e.getCause
    call("shutdown")
    call("startup")
  }

  def close(): Unit = synchronized {
    if !closed then
      closed = true
      KraftCluster.running.remove(this): Unit
      try admin.close()
      finally kit.close()
  }

private[testkit] object KraftCluster:

  // The test kit registers a JVM shutdown hook for each temporary directory it makes, which deletes it. The
  // JVM runs its shutdown hooks at once, so those would delete a running broker's log directories while
  // another hook (the one below, or an application's releasing its resources) shuts the broker down; a
  // broker whose log directories all fail halts the JVM, which would then end with status 1 after every test
  // passed. The kit's hooks are kept here instead, and run once every broker still running is closed. A halt
  // or exit a broker asks for is reported, not obeyed: the broker is a fixture, and a test that needs it
  // fails on its own.
  private val laterHooks = new ConcurrentLinkedQueue[Runnable]
  private val running = ConcurrentHashMap.newKeySet[KraftCluster]()

  private lazy val installed: Unit =
    Exit.setShutdownHookAdder((_, hook) => laterHooks.add(hook): Unit)
    val reported: Exit.Procedure = (status, message) =>
      System.err.println(
        s"weir-testkit: a Kafka broker asked to end the JVM (status $status: $message); ignored"
      )
    Exit.setHaltProcedure(reported)
    Exit.setExitProcedure(reported)
    sys.addShutdownHook {
      try running.forEach(_.close())
      finally laterHooks.forEach(_.run())
    }: Unit

  /** Broker settings for a one-node test cluster: quick group forming and heartbeats, one replica. */
  val defaults: Map[String, String] = Map(
    // a group forms at once instead of waiting for more members (the broker's default waits 3 s)
    "group.initial.rebalance.delay.ms" -> "0",
    // consumers may ask for a short session, so that a killed one's partitions move within a second
    "group.min.session.timeout.ms" -> "500",
    // members of the consumer protocol's groups hear of a rebalance within half a second
    "group.consumer.heartbeat.interval.ms" -> "500",
    "group.consumer.min.heartbeat.interval.ms" -> "100",
    // a restarted broker registers again only once the controller has given up its previous session (the
    // controller refuses a second registration of the same id while the first is live): a 3 s session, not
    // 9 s, makes a restart take about as long; half-second heartbeats keep a live broker well inside it
    "broker.session.timeout.ms" -> "3000",
    "broker.heartbeat.interval.ms" -> "500",
    "offsets.topic.replication.factor" -> "1",
    "offsets.topic.num.partitions" -> "1",
    "transaction.state.log.replication.factor" -> "1"
  )

  /** Starts a node with `properties` over [[defaults]]; returns once its broker is ready. */
  def start(properties: Map[String, String]): KraftCluster =
    installed
    val nodes =
      new TestKitNodes.Builder().setCombined(true).setNumBrokerNodes(1).setNumControllerNodes(1).build()
    val builder = new KafkaClusterTestKit.Builder(nodes)
    (defaults ++ properties).foreach((k, v) => builder.setConfigProp(k, v): Unit)
    val kit = builder.build()
    try
      kit.format()
      kit.startup()
      kit.waitForReadyBrokers()
      val cluster = new KraftCluster(kit)
      running.add(cluster): Unit
      cluster
    catch
      case e: Throwable =>
        try kit.close()
        catch case c: Throwable => e.addSuppressed(c)
        throw e

  /** The JVM's one node, with [[defaults]], started by the first use and closed when the JVM exits. */
  lazy val shared: KraftCluster = start(Map.empty)
