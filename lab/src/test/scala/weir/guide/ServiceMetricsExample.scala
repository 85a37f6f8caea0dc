package weir.guide

// docs/guide.md, "Durable and Kafka metrics": DocSnippetsSuite checks that the guide's block is this code.

import cats.effect.{IO, Resource}
import org.apache.kafka.common.serialization.StringDeserializer
import org.typelevel.otel4s.metrics.Meter
import weir.*
import weir.kafka.{KafkaSettings, KafkaSource}
import weir.otel.{DurableMetrics, KafkaMetrics, WeirMetrics}
import weir.postgres.*

import scala.concurrent.duration.*

object ServiceMetricsExample:
  // weir's engine, durable and Kafka metrics, registered once on the service's meter
  final case class Metrics(engine: WeirMetrics[IO], durable: DurableMetrics[IO], kafka: KafkaMetrics[IO])

  def metrics(db: Database[IO], meter: Meter[IO]): Resource[IO, Metrics] =
    for
      engine <- WeirMetrics.register(meter)
      // one count of the queues' depths per process, every 30 s, whatever the number of scrapes
      depths <- QueueDepths.start(db, QueueDepths.Settings(every = 30.seconds))
      // the workers' counts, the depths, and what the Database rode out itself (operators' actions)
      durable <- DurableMetrics.register(meter, Some(depths), Some(db))
      kafka <- KafkaMetrics.register(meter)
    yield Metrics(engine, durable, kafka)

  def emails(db: Database[IO], m: Metrics): Resource[IO, DurableWorker[IO, String]] =
    val worker = DurableWorker.start[IO, String, Unit](db, WorkerConfig(queue = "emails"))(source =>
      Pipeline(source).process(job => IO.println(job.payload))
    )
    m.engine.instrumentBy(m.durable.instrument(worker, "emails"), "emails", Some("emails"))(_.running)

  def orders(settings: KafkaSettings, m: Metrics): Resource[IO, KafkaSource[IO, String, String, Unit]] =
    val source =
      KafkaSource.start[IO, String, String, Unit](settings, new StringDeserializer, new StringDeserializer)(
        records => Pipeline(records).process(r => IO.println(r.value))
      )
    m.engine.instrumentBy(m.kafka.instrument(source, settings.groupId), "orders")(_.running)
