package weir.kafka

import cats.effect.IO
import cats.syntax.all.*
import weir.{Limit, TaskOutcome}

import java.util.concurrent.atomic.AtomicLong
import scala.concurrent.duration.*

class RebalanceSuite extends KafkaTesting:

  /** One handler event: a record of `key` with sequence `seq` started (or ended) on `consumer` at `tick`. */
  final case class Event(key: String, seq: Int, start: Boolean, consumer: String, tick: Long)

  /*
   * Once the second consumer starts, the first record the first consumer starts in each partition runs for
   * `slow`: a partition revoked while such a record runs has to wait for it (or interrupt it, when `slow`
   * outlasts the grace) before it may go to the second consumer, which starts at that very record.
   */
  rebalance(
    "a second consumer joins while records run: the revoke waits for them",
    1.second,
    5.seconds,
    false
  )
  rebalance(
    "a second consumer joins while records outlast the grace: they may be interrupted",
    3.seconds,
    300.millis,
    true
  )

  def rebalance(name: String, slow: FiniteDuration, grace: FiniteDuration, interrupts: Boolean)(using
      munit.Location
  ): Unit = test(s"$name; no record is lost, no key runs on two consumers at once, keys keep their order") {
    val partitions = 4
    val keys = 40
    val n = 1200
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
      joined <- IO.ref(false)
      slowed <- IO.ref(Set.empty[Int])
      pause = (r: Rec) =>
        joined.get.flatMap(j =>
          if !j then IO.pure(20.millis)
          else slowed.modify(ps => (ps + r.partition, if ps(r.partition) then 20.millis else slow))
        )
      handler = (consumer: String) =>
        (r: Rec) =>
          (log(
            r,
            consumer,
            true
          ) *> (if consumer == "a" then pause(r) else IO.pure(20.millis)).flatMap(IO.sleep))
            .guarantee(log(r, consumer, false))
      s = settings(topic, group).copy(revokeGrace = grace)
      result <- running(s)(handler("a"), _.withLimit(Limit.fixed(4))) { (a, seenA) =>
        outcomes(seenA, 50) *> joined.set(true) *>
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
      // a grace longer than any record leaves nothing to interrupt; with a shorter one, whether a slow record
      // is running in a revoked partition at that moment depends on which partitions the group moves
      if !interrupts then assertEquals(statsA.interrupted, 0L, s"interrupted: $statsA")
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

  test(
    "a revoke overlapping a running record: the record gets the grace, is interrupted, and its key runs on the joining consumer only after it ended"
  ) {
    for
      topic <- TestBroker.topic(2)
      group = TestBroker.fresh("g")
      _ <- TestBroker.produce(topic, List((0, "k0", "0"), (1, "k1", "0")))
      clock = new AtomicLong
      events <- IO.ref(Vector.empty[Event])
      log = (r: Rec, consumer: String, start: Boolean) =>
        IO(clock.incrementAndGet()).flatMap(t => events.update(_ :+ Event(r.key, 0, start, consumer, t)))
      bothRunning <- cats.effect.std.CountDownLatch[IO](2)
      // on the first consumer both records run until they are cancelled
      handlerA =
        (r: Rec) => (log(r, "a", true) *> bothRunning.release *> IO.never[Unit]).guarantee(log(r, "a", false))
      handlerB = (r: Rec) => log(r, "b", true) *> log(r, "b", false)
      s = settings(topic, group).copy(revokeGrace = 300.millis)
      result <- running(s)(handlerA) { (a, seenA) =>
        bothRunning.await *> running(s)(handlerB) { (_, seenB) =>
          eventually("a record to succeed on the second consumer")(
            seenB.get.map(_.collectFirst { case TaskOutcome.Succeeded(r, _, _) => r.key })
          )
        }.flatMap(key => (seenA.get, a.stats).mapN((oa, st) => (key, oa, st)))
      }
      (moved, outsA, statsA) = result
      all <- events.get
    yield
      assertEquals(statsA.interrupted, 1L, s"$statsA")
      val interrupted = outsA.collect { case TaskOutcome.Failed(r, e, weir.Disposition.Interrupted, _) =>
        (r.key, e.getMessage)
      }
      assertEquals(interrupted, Vector((moved, "task interrupted: partition revoked")))
      val ofKey = all.filter(_.key == moved).sortBy(_.tick).map(e => (e.consumer, e.start))
      // it ended on the first consumer before it started on the second
      assertEquals(ofKey, Vector(("a", true), ("a", false), ("b", true), ("b", false)))
  }
