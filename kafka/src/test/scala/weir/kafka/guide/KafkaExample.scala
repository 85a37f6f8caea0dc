package weir.kafka.guide

// docs/kafka.md: KafkaGuideSuite checks that the page's block is this code, verbatim, and runs it.

import cats.effect.IO
import cats.syntax.all.*
import org.apache.kafka.common.serialization.StringDeserializer
import weir.*
import weir.kafka.*
import scala.concurrent.duration.*

object KafkaExample:
  def send(email: String): IO[Unit] = IO.sleep((email.length % 3).millis)

  def settings(brokers: String, topic: String): KafkaSettings =
    KafkaSettings(
      bootstrapServers = brokers,
      groupId = s"$topic-senders",
      topics = List(topic),
      maxInFlight = 1000, // records held at most, whatever the keys and partitions
      deadLetterTopic = Some(s"$topic-dead") // undecodable records, and those that failed for good
    )

  // per record key one at a time, in offset order; different keys concurrently, 50 at most
  def run(brokers: String, topic: String, stopWhen: IO[Unit]): IO[Summary[KafkaRecord[String, String]]] =
    KafkaSource
      .start[IO, String, String, Unit](
        settings(brokers, topic),
        new StringDeserializer,
        new StringDeserializer,
        RecordOrder.byKey
      ) { source =>
        Pipeline(source)
          .process(record => send(record.value))
          .withLimit(Limit.fixed(50))
          .withRetry(Retry.exponential(100.millis, maxAttempts = 3))
      }
      .use { kafka =>
        // read the outcomes while the source runs: unread ones count against maxInFlight
        (kafka.outcomes.compile.drain, stopWhen *> kafka.drain(10.seconds)).parMapN((_, summary) => summary)
      }
