package weir.kafka

import cats.effect.{Deferred, IO}
import org.apache.kafka.common.TopicPartition

class LagSuite extends KafkaTesting:

  private def records(partitions: Int, from: Int, until: Int) =
    for
      p <- 0 until partitions
      i <- from until until
    yield (p, s"k$p-$i", s"$i")

  /** Waits until the source's lag is `expected`, and returns its stats then. */
  private def lagIs(kafka: KafkaSource[IO, String, String, Unit], expected: Map[TopicPartition, Long]) =
    eventually(s"lag $expected")(kafka.stats.map(s => Option.when(s.lag == expected)(s)))

  test("the lag of each partition is its end offset minus the group's commit, while fetched") {
    for
      topic <- TestBroker.topic(2)
      group = TestBroker.fresh("g")
      tps = Vector(new TopicPartition(topic, 0), new TopicPartition(topic, 1))
      _ <- TestBroker.produce(topic, records(2, 0, 10))
      gate <- Deferred[IO, Unit]
      _ <- running(settings(topic, group))(r => if r.offset >= 10 then gate.get else IO.unit) { (kafka, _) =>
        for
          // everything finished and committed: no lag, the ends seen are the records written
          done <- lagIs(kafka, tps.map(_ -> 0L).toMap)
          _ = assertEquals(done.endOffsets, tps.map(_ -> 10L).toMap)
          // five more per partition, held by the handler: written, received, not committed
          _ <- TestBroker.produce(topic, records(2, 10, 15))
          held <- lagIs(kafka, tps.map(_ -> 5L).toMap)
          _ = assertEquals(held.endOffsets, tps.map(_ -> 15L).toMap)
          _ = assertEquals(held.committed, tps.map(_ -> 10L).toMap)
          _ = assert(!held.paused, held)
          _ <- gate.complete(())
          _ <- lagIs(kafka, tps.map(_ -> 0L).toMap)
        yield ()
      }
    yield ()
  }

  test(
    "a paused partition's end offset is asked of the broker: its lag grows while the source holds records"
  ) {
    for
      topic <- TestBroker.topic(1)
      group = TestBroker.fresh("g")
      tp = new TopicPartition(topic, 0)
      gate <- Deferred[IO, Unit]
      // a first record finished: the group has a commit
      _ <- TestBroker.produce(topic, records(1, 0, 1))
      _ <- running(settings(topic, group).copy(maxInFlight = 2))(r =>
        if r.offset >= 1 then gate.get else IO.unit
      ) { (kafka, _) =>
        for
          _ <- lagIs(kafka, Map(tp -> 0L))
          // two records fill maxInFlight and pause the partition; the eight written after it paused are
          // never fetched
          _ <- TestBroker.produce(topic, records(1, 1, 3))
          _ <- eventually("the source paused")(kafka.stats.map(s => Option.when(s.paused && s.held == 2)(())))
          _ <- TestBroker.produce(topic, records(1, 3, 11))
          paused <- lagIs(kafka, Map(tp -> 10L))
          _ = assertEquals(paused.endOffsets, Map(tp -> 11L))
          _ <- gate.complete(())
          _ <- lagIs(kafka, Map(tp -> 0L))
        yield ()
      }
    yield ()
  }

  test("a partition the group committed before is lagged from that commit while nothing finishes") {
    for
      topic <- TestBroker.topic(1)
      group = TestBroker.fresh("g")
      tp = new TopicPartition(topic, 0)
      _ <- TestBroker.produce(topic, records(1, 0, 4))
      // first life: everything finished and committed
      _ <- running(settings(topic, group))(_ => IO.unit)((_, seen) =>
        outcomes(seen, 4) *> committedTo(group, tp, 4L)
      )
      _ <- TestBroker.produce(topic, records(1, 4, 7))
      never <- Deferred[IO, Unit]
      // second life: nothing finishes, so the commit stays the group's
      _ <- running(settings(topic, group))(_ => never.get) { (kafka, _) =>
        lagIs(kafka, Map(tp -> 3L)).map(s => assertEquals(s.committed, Map(tp -> 4L)))
      }
    yield ()
  }
