package weir.otel

import cats.effect.{Deferred, IO}
import cats.syntax.all.*
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.StringDeserializer
import weir.Pipeline
import weir.kafka.{KafkaSource, KafkaTesting, TestBroker}

/** weir-otel4s-kafka on a source and the in-process broker, read back through the Prometheus endpoint. */
class KafkaMetricsSuite extends KafkaTesting:

  private def records(partitions: Int, from: Int, until: Int) =
    for
      p <- 0 until partitions
      i <- from until until
    yield (p, s"k$p-$i", s"$i")

  private val consumed = "messaging_client_consumed_messages_total"
  private val lag = "weir_kafka_consumer_lag"

  /** What the scrapes showed: the first twenty records done, five more per partition held, the source ended. */
  private final case class Seen(
      done: Prometheus.Exposition,
      held: Prometheus.Exposition,
      ended: Prometheus.Exposition
  )

  test(
    "a source's counters and each partition's lag, scraped: lag is what was produced minus what the group committed"
  ) {
    val topicName = TestBroker.topic(2)
    (topicName, Deferred[IO, Unit]).flatMapN { (topic, gate) =>
      val group = TestBroker.fresh("g")
      val tps = Vector(new TopicPartition(topic, 0), new TopicPartition(topic, 1))
      val on = Vector("messaging_system" -> "kafka", "messaging_consumer_group_name" -> group)
      def lagOf(p: Int)(e: Prometheus.Exposition) =
        e.value(
          lag,
          (on :+ ("messaging_destination_name" -> topic) :+
            ("messaging_destination_partition_id" -> p.toString))*
        )
      def noLag(e: Prometheus.Exposition) = lagOf(0)(e).contains(0.0) && lagOf(1)(e).contains(0.0)
      val source = KafkaSource.start[IO, String, String, Unit](
        settings(topic, group),
        new StringDeserializer,
        new StringDeserializer
      )(src => Pipeline(src).process(r => if r.offset >= 10 then gate.get else IO.unit))
      val scenario = Prometheus.resource.use { prometheus =>
        KafkaMetrics.register(prometheus.meter).use { metrics =>
          val running = metrics.instrument(source, group).use { kafka =>
            kafka.outcomes.compile.drain.background.surround(
              for
                // all twenty finished and committed: no lag
                done <- prometheus.await("twenty consumed, no lag")(e =>
                  e.value(consumed, on*).contains(20.0) && noLag(e)
                )
                // five more per partition, held by the handler: written and received, not committed
                _ <- TestBroker.produce(topic, records(2, 10, 15))
                held <- prometheus.await("a lag of five on each partition") { e =>
                  lagOf(0)(e).contains(5.0) && lagOf(1)(e).contains(5.0) &&
                  e.value("weir_kafka_held", on*).contains(10.0)
                }
                committed <- TestBroker.committed(group)
                _ = assertEquals(tps.map(committed.get), Vector(Some(10L), Some(10L)))
                _ <- gate.complete(())
                _ <- prometheus.await("the lag back to 0")(noLag)
              yield (done, held)
            )
          }
          running.flatMap { (done, held) =>
            prometheus.await("the ended source's counts")(_.value(consumed, on*).contains(30.0)).map(Seen(
              done,
              held,
              _
            ))
          }
        }
      }
      TestBroker.produce(topic, records(2, 0, 10)) *> scenario.map { seen =>
        assertEquals(seen.done.value("weir_kafka_undecodable_total", on*), Some(0.0))
        assert(seen.done.value("weir_kafka_commits_total", on*).exists(_ >= 1.0), seen.done.text)
        assertEquals(seen.done.value("weir_kafka_commit_failures_total", on*), Some(0.0))
        assertEquals(seen.done.typeOf(lag), Some("gauge"))
        assertEquals(seen.done.typeOf(consumed), Some("counter"))
        assertEquals(seen.held.value(consumed, on*), Some(30.0))
        assertEquals(seen.held.value("weir_kafka_paused", on*), Some(0.0))
        // once the source is released its counters stay, and its partitions' lag goes
        assertEquals(seen.ended.of(lag), Vector.empty)
        assertEquals(seen.ended.value("weir_kafka_held", on*), Some(0.0))
      }
    }
  }
