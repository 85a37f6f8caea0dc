package weir.guide

// docs/guide.md, "Testing your handlers": DocSnippetsSuite checks that the guide's block is this code,
// verbatim; GuideExamplesSuite runs it.

import cats.effect.IO
import org.apache.kafka.clients.producer.ProducerRecord
import org.apache.kafka.common.serialization.{StringDeserializer, StringSerializer}
import weir.Pipeline
import weir.kafka.{KafkaSettings, KafkaSource, RecordOrder}
import weir.testkit.{Eventually, KafkaBroker}

object ClickCounterBrokerTest:
  // a broker of the test's own (KafkaBroker.shared is the JVM's one, for suites that share it)
  val throughABroker: IO[Map[String, Int]] =
    KafkaBroker.resource[IO]().use { broker =>
      val clicks =
        List("home", "cart", "home").map(page => new ProducerRecord("clicks", page, s"a click on $page"))
      val settings = KafkaSettings(
        bootstrapServers = broker.bootstrapServers,
        groupId = "counter",
        topics = List("clicks")
      )
      for
        _ <- broker.createTopic("clicks", partitions = 2)
        _ <- broker.produce(clicks, new StringSerializer, new StringSerializer)
        counts <- IO.ref(Map.empty[String, Int])
        counted <- KafkaSource
          .start[IO, String, String, Unit](
            settings,
            new StringDeserializer,
            new StringDeserializer,
            RecordOrder.byKey
          )(source => Pipeline(source).process(ClickCounter.handle(counts)))
          .use(kafka =>
            // outcomes are read while the source runs: unread ones count against maxInFlight
            kafka.outcomes.compile.drain.background.surround(
              Eventually.until("three clicks counted", counts.get)(_.values.sum == 3)
            )
          )
      yield counted // Map("home" -> 2, "cart" -> 1)
    }
