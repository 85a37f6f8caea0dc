package weir.testkit

import cats.effect.IO
import munit.CatsEffectSuite
import org.apache.kafka.clients.consumer.{ConsumerConfig, KafkaConsumer}
import org.apache.kafka.clients.producer.ProducerRecord
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.{StringDeserializer, StringSerializer}

import java.net.{InetSocketAddress, Socket}
import java.time.Duration as JDuration
import java.util.Properties
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

/** A broker starts, serves topics and records, survives a restart, and stops listening once released. */
class KafkaBrokerSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 120.seconds

  /** Every record of `topic`'s partition 0, from the start, once there are `n`. */
  private def consume(bootstrap: String, topic: String, n: Int): IO[Vector[(String, String)]] =
    IO.blocking {
      val p = new Properties
      p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap)
      new KafkaConsumer(p, new StringDeserializer, new StringDeserializer)
    }.bracket { c =>
      val tp = new TopicPartition(topic, 0)
      IO.blocking { c.assign(List(tp).asJava); c.seekToBeginning(List(tp).asJava) } *>
        IO.ref(Vector.empty[(String, String)]).flatMap { seen =>
          val poll = IO.blocking(c.poll(JDuration.ofMillis(50)).asScala.toVector.map(r => r.key -> r.value))
          Eventually.until(s"$n records on $topic", poll.flatMap(rs => seen.updateAndGet(_ ++ rs)))(_.size >=
            n)
        }
    }(c => IO.blocking(c.close()))

  private def listening(bootstrap: String): IO[Boolean] =
    val Array(host, port) = bootstrap.split(",").head.split(":")
    IO.blocking {
      val s = new Socket
      try
        s.connect(new InetSocketAddress(host, port.toInt), 1000)
        true
      catch case _: java.io.IOException => false
      finally s.close()
    }

  test(
    "a broker of its own creates topics with leaders, keeps records in order across a restart, and stops on release"
  ) {
    val records = (1 to 5).map(i => new ProducerRecord("orders", 0, s"k$i", s"v$i"))
    for
      bootstrap <- KafkaBroker.resource[IO]().use { broker =>
        for
          _ <- broker.createTopic("orders", partitions = 3)
          _ <- broker.produce(records, new StringSerializer, new StringSerializer)
          _ <- broker.restart
          seen <- consume(broker.bootstrapServers, "orders", 5)
          open <- listening(broker.bootstrapServers)
        yield
          assertEquals(seen, (1 to 5).map(i => s"k$i" -> s"v$i").toVector)
          assert(open)
          broker.bootstrapServers
      }
      after <- listening(bootstrap)
    yield assert(!after, s"released, $bootstrap still accepts connections")
  }

  test("the shared broker is started once per JVM: every call gives the same broker") {
    for
      a <- KafkaBroker.shared[IO]
      b <- KafkaBroker.shared[IO]
      _ <- a.createTopic("shared-check")
      open <- listening(b.bootstrapServers)
    yield
      assertEquals(a.bootstrapServers, b.bootstrapServers)
      assert(open)
  }

  test("creating a topic that exists fails, naming it") {
    KafkaBroker.shared[IO].flatMap(b => b.createTopic("twice") *> b.createTopic("twice").attempt).map { r =>
      assert(r.left.exists(e => String.valueOf(e.getMessage).contains("twice")), s"was: $r")
    }
  }
