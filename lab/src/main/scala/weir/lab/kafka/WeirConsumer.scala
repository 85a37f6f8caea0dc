package weir.lab.kafka

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import org.apache.kafka.common.serialization.StringDeserializer
import weir.{Limit, Pipeline}
import weir.kafka.{KafkaSettings, KafkaSource, RecordOrder}

import scala.concurrent.duration.*

/** weir's consumer in the lab: `KafkaSource` feeding a `Pipeline` of the handler, one record of a key at a time. */
object WeirConsumer:

  def resource(s: ConsumerSettings, recorder: Recorder): Resource[IO, Consuming] =
    val settings = KafkaSettings(
      bootstrapServers = s.bootstrap,
      groupId = s.group,
      topics = List(s.topic),
      maxInFlight = s.maxInFlight,
      pollTimeout = s.pollMillis.millis,
      properties = s.properties
    )
    val sleep = s.sleepMillis.millis
    KafkaSource
      .start[IO, String, String, Unit](
        settings,
        new StringDeserializer,
        new StringDeserializer,
        RecordOrder.byKey
      )(source =>
        Pipeline(source)
          .process { r =>
            IO(recorder.started()).flatMap(start =>
              IO.sleep(sleep).whenA(s.sleepMillis > 0) *>
                IO(recorder.finished(r.partition, r.offset, r.key, start))
            )
          }
          .withLimit(Limit.fixed(s.limit))
      )
      // unread outcomes count against maxInFlight: read them for as long as the source runs
      .flatTap(kafka => kafka.outcomes.compile.drain.background)
      .map(kafka =>
        new Consuming:
          def revocations: IO[Long] = kafka.stats.map(_.revoked)
      )
