package weir.kafka

import cats.effect.IO
import cats.syntax.all.*
import weir.{Limit, TaskOutcome}

import java.util.concurrent.atomic.AtomicLong
import scala.concurrent.duration.*

class RebalanceSuite extends KafkaTesting:

  /** One handler event: a record of `key` with sequence `seq` started (or ended) on `consumer` at `tick`. */
  final case class Event(key: String, seq: Int, start: Boolean, consumer: String, tick: Long)

  test(
    "a second consumer joins: no record is lost, no key runs on two consumers at once, keys keep their order"
  ) {
    val partitions = 4
    val keys = 40
    val n = 800
    for
      topic <- TestBroker.topic(partitions)
      group = TestBroker.fresh("g")
      // key k always goes to partition k % partitions, its records numbered 0, 1, 2…
      _ <- TestBroker.produce(
        topic,
        (0 until n).map(i => ((i % keys) % partitions, s"k${i % keys}", s"${i / keys}"))
      )
      clock = new AtomicLong
      events <- IO.ref(Vector.empty[Event])
      log = (r: Rec, consumer: String, start: Boolean) =>
        IO(clock.incrementAndGet()).flatMap(t =>
          events.update(_ :+ Event(r.key, r.value.toInt, start, consumer, t))
        )
      handler = (consumer: String) =>
        (r: Rec) => (log(r, consumer, true) *> IO.sleep(20.millis)).guarantee(log(r, consumer, false))
      s = settings(topic, group)
      result <- running(s)(handler("a"), _.withLimit(Limit.fixed(4))) { (a, seenA) =>
        outcomes(seenA, 50) *>
          running(s)(handler("b"), _.withLimit(Limit.fixed(4))) { (_, seenB) =>
            eventually("every record to succeed on one consumer or the other", 60.seconds)(
              (seenA.get, seenB.get).tupled.map { (oa, ob) =>
                val done = (oa ++ ob).collect { case TaskOutcome.Succeeded(r, _, _) =>
                  (r.partition, r.offset)
                }.toSet
                Option.when(done.size == n)((oa, ob))
              }
            )
          }.flatMap(r => a.stats.map(st => (r: (Vector[Out], Vector[Out]), st)))
      }
      (outs, statsA) = result
      (oa, ob) = (outs._1, outs._2)
      all <- events.get
    yield
      assert(statsA.revoked > 0, s"consumer a never had a partition revoked: $statsA")
      assert(
        ob.exists(_.isInstanceOf[TaskOutcome.Succeeded[?, ?]]),
        s"consumer b never ran a record (a ran ${oa.size})"
      )
      all.groupBy(_.key).foreach { (key, es) =>
        val sorted = es.sortBy(_.tick)
        // start, end, start, end… in tick order: never two runs of one key at once, on one consumer or two
        sorted.grouped(2).foreach {
          case Vector(s, e) =>
            assert(
              s.start && !e.start && s.seq == e.seq && s.consumer == e.consumer,
              s"key $key overlapped: $s, $e"
            )
          case rest => fail(s"key $key: unmatched $rest")
        }
        // each record first starts after every earlier record of its key first started
        val firsts = sorted.filter(_.start).map(_.seq).distinct
        assertEquals(firsts, firsts.sorted, s"key $key out of order")
      }
  }
