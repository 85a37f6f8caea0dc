package weir.kafka

import cats.effect.{Deferred, IO}
import cats.syntax.all.*
import org.apache.kafka.common.TopicPartition
import weir.Limit

class CommitSuite extends KafkaTesting:

  test("only the contiguous finished prefix is committed: a slow record holds the commit at its offset") {
    for
      topic <- TestBroker.topic(1)
      group = TestBroker.fresh("g")
      tp = new TopicPartition(topic, 0)
      // ten keys, so that the nine other records run past the slow one
      _ <- TestBroker.produce(topic, (0 until 10).map(i => (0, s"k$i", s"$i")))
      gate <- Deferred[IO, Unit]
      _ <- running(settings(topic, group))(
        r => if r.offset == 3L then gate.get else IO.unit,
        _.withLimit(Limit.fixed(4))
      ) { (kafka, seen) =>
        for
          _ <- outcomes(seen, 9)
          // every finished record has been acknowledged; two commit rounds later the commit reflects them
          rounds <- kafka.stats.map(_.commitRounds)
          _ <- eventually("two commit rounds")(kafka.stats.map(s =>
            Option.when(s.commitRounds >= rounds + 2)(())
          ))
          held <- TestBroker.committed(group)
          _ = assertEquals(held.get(tp), Some(3L), "the commit must stop at the slow record")
          stats <- kafka.stats
          _ = assertEquals(stats.held, 7, "the slow record and the six finished above it are held")
          _ <- gate.complete(())
          _ <- committedTo(group, tp, 10L)
        yield ()
      }
    yield ()
  }

  test(
    "without commit metadata, a restart re-reads from the committed prefix: the slow record and those finished above it run again"
  ) {
    for
      topic <- TestBroker.topic(1)
      group = TestBroker.fresh("g")
      tp = new TopicPartition(topic, 0)
      _ <- TestBroker.produce(topic, (0 until 6).map(i => (0, s"k$i", s"$i")))
      never <- Deferred[IO, Unit]
      s = settings(topic, group).copy(commitMetadataBytes = 0)
      // first life: offset 2 never ends; the source is released with it running
      _ <- running(s)(r => if r.offset == 2L then never.get else IO.unit) {
        (kafka, seen) =>
          outcomes(seen, 5) *> committedTo(group, tp, 2L) *> kafka.stats.flatMap(s0 =>
            eventually("another commit round")(
              kafka.stats.map(s => Option.when(s.commitRounds >= s0.commitRounds + 1)(()))
            )
          )
      }
      _ <- committedTo(group, tp, 2L)
      // second life: everything from offset 2 on runs again, nothing before it does
      again <- running(s)(_ => IO.unit)((_, seen) =>
        outcomes(seen, 4) <* committedTo(group, tp, 6L)
      )
    yield assertEquals(again.map(_.task.offset).sorted, Vector(2L, 3L, 4L, 5L))
  }

  test(
    "the commit's metadata names the records finished above its offset: after a restart only the unfinished one runs again"
  ) {
    for
      topic <- TestBroker.topic(1)
      group = TestBroker.fresh("g")
      tp = new TopicPartition(topic, 0)
      _ <- TestBroker.produce(topic, (0 until 10).map(i => (0, s"k$i", s"$i")))
      never <- Deferred[IO, Unit]
      // first life: 0..9 finish except 3, which never ends; the commit stops at 3 and names 4..9
      _ <- running(settings(topic, group))(r => if r.offset == 3L then never.get else IO.unit) { (_, seen) =>
        outcomes(seen, 9) *> eventually("the commit at 3 naming 4..9")(
          commitOf(group, tp).map(c => Option.when(c.contains((3L, "w1:1,6")))(()))
        )
      }
      _ <- TestBroker.produce(topic, List((0, "k10", "10"), (0, "k11", "11")))
      // second life: 3 and the records after 9 run, 4..9 are skipped
      result <- running(settings(topic, group))(_ => IO.unit)((kafka, seen) =>
        (outcomes(seen, 3) <* committedTo(group, tp, 12L), kafka.stats).tupled
      )
      (again, stats) = result
    yield
      assertEquals(again.map(_.task.offset).sorted, Vector(3L, 10L, 11L))
      assertEquals(stats.skipped, 6L, s"$stats")
  }
