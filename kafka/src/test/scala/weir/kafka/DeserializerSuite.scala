package weir.kafka

import cats.effect.IO
import org.apache.kafka.common.KafkaException
import org.apache.kafka.common.header.Headers
import org.apache.kafka.common.serialization.Deserializer
import weir.{Pipeline, TaskOutcome}

import java.util.concurrent.atomic.AtomicInteger

/**
 * The user's deserializers are the source's, as kafka-clients treats the ones it builds: configured with the
 * consumer's properties before the first record, closed once on release.
 */
class DeserializerSuite extends KafkaTesting:
  import DeserializerSuite.*

  /** Runs a source over `topic` until `n` outcomes were read, and returns their keys and values. */
  private def decoded(
      s: KafkaSettings,
      keys: Deserializer[String],
      values: Deserializer[String],
      n: Int,
      whileRunning: IO[Unit] = IO.unit
  ): IO[Vector[(String, String)]] =
    KafkaSource
      .start[IO, String, String, Unit](s, keys, values)(source => Pipeline(source).process(_ => IO.unit))
      .use(kafka => whileRunning *> kafka.outcomes.take(n.toLong).compile.toVector)
      .map(_.collect { case TaskOutcome.Succeeded(r, _, _) => (r.key, r.value) })

  test(
    "a deserializer that needs its configuration gets the consumer's properties, and is closed once on release"
  ) {
    val keys = new Suffixing
    val values = new Suffixing
    for
      topic <- TestBroker.topic(1)
      _ <- TestBroker.produce(topic, Vector((0, "k1", "v1"), (0, "k2", "v2")))
      s = settings(topic, TestBroker.fresh("g")).copy(properties = Map(Suffixing.Property -> "!"))
      got <- decoded(
        s,
        keys,
        values,
        2,
        whileRunning = IO(assertEquals((keys.closes.get, values.closes.get), (0, 0)))
      )
    yield
      assertEquals(got.sorted, Vector(("k1!", "v1!"), ("k2!", "v2!")))
      assertEquals(keys.configured.get.map(_._1), Some(true))
      assertEquals(values.configured.get.map(_._1), Some(false))
      // the consumer's properties: the source's own beside the user's
      assertEquals(values.configured.get.map(_._2.get("group.id")), Some(s.groupId))
      assertEquals(values.configured.get.map(_._2.get("enable.auto.commit")), Some("false"))
      assertEquals((keys.configures.get, values.configures.get), (1, 1))
      assertEquals((keys.closes.get, values.closes.get), (1, 1))
  }

  test("one instance for keys and values is configured as each and closed once") {
    val both = new Suffixing
    for
      topic <- TestBroker.topic(1)
      _ <- TestBroker.produce(topic, Vector((0, "k", "v")))
      s = settings(topic, TestBroker.fresh("g")).copy(properties = Map(Suffixing.Property -> "?"))
      got <- decoded(s, both, both, 1)
    yield
      assertEquals(got, Vector(("k?", "v?")))
      assertEquals((both.configures.get, both.closes.get), (2, 1))
  }

  test(
    "with configureDeserializers = false an instance configured already is left as it is, and still closed"
  ) {
    val keys = new Suffixing
    val values = new Suffixing
    val mine = new java.util.HashMap[String, AnyRef]()
    mine.put(Suffixing.Property, "#")
    keys.configure(mine, true)
    values.configure(mine, false)
    for
      topic <- TestBroker.topic(1)
      _ <- TestBroker.produce(topic, Vector((0, "k", "v")))
      s = settings(topic, TestBroker.fresh("g")).copy(
        properties = Map(Suffixing.Property -> "!"),
        configureDeserializers = false
      )
      got <- decoded(s, keys, values, 1)
    yield
      assertEquals(got, Vector(("k#", "v#")))
      assertEquals((keys.configures.get, values.configures.get), (1, 1))
      assertEquals((keys.closes.get, values.closes.get), (1, 1))
  }

  test("a deserializer that refuses its configuration fails the start, named, and is closed") {
    val keys = new Suffixing
    val values = new Suffixing
    for
      topic <- TestBroker.topic(1)
      // no suffix among the properties: the value deserializer refuses them
      failed <- decoded(settings(topic, TestBroker.fresh("g")), keys, values, 1).attempt
    yield
      failed match
        case Left(e: KafkaException) =>
          assert(
            e.getMessage.startsWith("the key deserializer (weir.kafka.DeserializerSuite$Suffixing) refused"),
            e.getMessage
          )
          assert(e.getMessage.contains(s"no ${Suffixing.Property} among the properties"), e.getMessage)
        case other => fail(s"expected the start to fail naming the deserializer, got $other")
      assertEquals((keys.closes.get, values.closes.get), (1, 0))
  }

object DeserializerSuite:

  /**
   * Appends the suffix its configuration names to every key or value it decodes; refuses to decode before
   * it is configured, and refuses a configuration without a suffix. Counts its configures and closes.
   */
  final class Suffixing extends Deserializer[String]:
    val configured =
      new java.util.concurrent.atomic.AtomicReference[Option[(Boolean, java.util.Map[String, ?])]](None)
    val configures = new AtomicInteger
    val closes = new AtomicInteger
    @volatile private var suffix: Option[String] = None

    override def configure(configs: java.util.Map[String, ?], isKey: Boolean): Unit =
      configures.incrementAndGet(): Unit
      configured.set(Some((isKey, configs)))
      Option(configs.get(Suffixing.Property)) match
        case Some(s) => suffix = Some(s.toString)
        case None => throw new IllegalArgumentException(s"no ${Suffixing.Property} among the properties")

    def deserialize(topic: String, data: Array[Byte]): String =
      suffix match
        case Some(s) => new String(data, "UTF-8") + s
        case None => throw new IllegalStateException("not configured")

    override def deserialize(topic: String, headers: Headers, data: Array[Byte]): String =
      deserialize(topic, data)

    override def close(): Unit = closes.incrementAndGet(): Unit

  object Suffixing:
    val Property = "weir.test.suffix"
