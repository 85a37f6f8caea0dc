package weir.kafka

import cats.effect.{IO, Ref}
import munit.CatsEffectSuite
import org.apache.kafka.clients.consumer.{ConsumerConfig, ConsumerRecord, KafkaConsumer}
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.{ByteArrayDeserializer, Deserializer, StringDeserializer}
import org.typelevel.log4cats.LoggerFactory
import org.typelevel.log4cats.noop.NoOpFactory
import weir.testkit.Eventually
import weir.{FailurePolicy, Pipeline, TaskOutcome}

import java.time.Duration as JDuration
import java.util.Properties
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

/** What the Kafka suites share: quick settings, a source run with its outcomes collected, waits on signals. */
abstract class KafkaTesting extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 90.seconds

  type Rec = KafkaRecord[String, String]
  type Out = TaskOutcome[Rec, Unit]

  /** A value deserializer that rejects the value `poison`, naming it. */
  val poisonRejecting: Deserializer[String] = (_: String, data: Array[Byte]) =>
    val s = new String(data, "UTF-8")
    if s == "poison" then throw new IllegalArgumentException("not a value: poison") else s

  def settings(topic: String, group: String): KafkaSettings =
    KafkaSettings(
      bootstrapServers = TestBroker.bootstrap,
      groupId = group,
      topics = List(topic),
      pollTimeout = 20.millis,
      commitEvery = 50.millis,
      revokeGrace = 5.seconds,
      // a member hears of a rebalance at its next heartbeat
      properties = Map("heartbeat.interval.ms" -> "100", "session.timeout.ms" -> "6000")
    )

  /**
   * Runs a source with `handler` while `body` runs, every outcome read (and so acknowledged) into the
   * returned `Ref` as it comes; releases the source when `body` ends. It logs to `logs` (nowhere, unless
   * given).
   */
  def running[A](
      s: KafkaSettings,
      order: RecordOrder[String, String] = RecordOrder.byKey,
      policy: FailurePolicy[IO, Rec] = FailurePolicy.skip[IO],
      logs: LoggerFactory[IO] = NoOpFactory[IO]
  )(
      handler: Rec => IO[Unit],
      configure: Pipeline[IO, Rec, Unit] => Pipeline[IO, Rec, Unit] = identity
  )(body: (KafkaSource[IO, String, String, Unit], Ref[IO, Vector[Out]]) => IO[A]): IO[A] =
    given LoggerFactory[IO] = logs
    Ref[IO].of(Vector.empty[Out]).flatMap { seen =>
      KafkaSource
        .start[IO, String, String, Unit](s, new StringDeserializer, new StringDeserializer, order)(source =>
          configure(Pipeline(source).process(handler).withFailurePolicy(policy))
        )
        .use { kafka =>
          kafka.outcomes.evalTap(o => seen.update(_ :+ o)).compile.drain.background.surround(body(
            kafka,
            seen
          ))
        }
    }

  /** Polls `probe` every 20 ms until it gives a value; fails naming `what` after `timeout`. */
  def eventually[A](what: String, timeout: FiniteDuration = 30.seconds)(probe: IO[Option[A]]): IO[A] =
    Eventually.defined(what, probe, within = timeout, every = 20.millis)

  /** Waits until `n` outcomes were read. */
  def outcomes(seen: Ref[IO, Vector[Out]], n: Int): IO[Vector[Out]] =
    eventually(s"$n outcomes")(seen.get.map(v => Option.when(v.size >= n)(v)))

  /** Waits until the group's committed offset of `tp` is `offset`. */
  def committedTo(group: String, tp: TopicPartition, offset: Long): IO[Unit] =
    eventually(s"$group to commit $tp at $offset")(
      TestBroker.committed(group).map(c => Option.when(c.get(tp).contains(offset))(()))
    )

  /** The group's committed offset and metadata of `tp`, as the broker has them. */
  def commitOf(group: String, tp: TopicPartition): IO[Option[(Long, String)]] =
    IO.blocking(TestBroker.admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get())
      .map(m => Option(m.get(tp)).map(om => (om.offset, om.metadata)))

  /** Reads `n` records of the dead-letter topic `topic` (one partition), as raw bytes. */
  def readDeadLetters(topic: String, n: Int): IO[Vector[ConsumerRecord[Array[Byte], Array[Byte]]]] =
    IO.blocking {
      val p = new Properties
      p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, TestBroker.bootstrap)
      new KafkaConsumer(p, new ByteArrayDeserializer, new ByteArrayDeserializer)
    }.bracket { c =>
      IO.blocking(c.assign(List(new TopicPartition(topic, 0)).asJava)) *>
        IO.blocking(c.seekToBeginning(List(new TopicPartition(topic, 0)).asJava)) *>
        Ref[IO].of(Vector.empty[ConsumerRecord[Array[Byte], Array[Byte]]]).flatMap { got =>
          eventually(s"$n dead letters on $topic")(
            IO.blocking(c.poll(JDuration.ofMillis(50)).asScala.toVector).flatMap(rs =>
              got.updateAndGet(_ ++ rs).map(all => Option.when(all.size >= n)(all))
            )
          )
        }
    }(c => IO.blocking(c.close()))

  def header(r: ConsumerRecord[?, ?], name: String): Option[String] =
    Option(r.headers.lastHeader(name)).map(h => new String(h.value, "UTF-8"))
