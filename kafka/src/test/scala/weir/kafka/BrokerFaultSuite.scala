package weir.kafka

import cats.effect.{Deferred, IO, Ref}
import cats.syntax.all.*
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.serialization.{Deserializer, StringDeserializer}
import weir.{Limit, NotStartedReason, Pipeline, TaskOutcome}

import java.util.concurrent.CountDownLatch
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

/** Faults outside the source: a consumer that drops out of its group, a broker that restarts. */
class BrokerFaultSuite extends KafkaTesting:

  test(
    "a lost partition: its running record is interrupted at once, its unstarted one never starts; the next assignment runs them, skipping what the commit named"
  ) {
    // the value deserializer runs on the poller thread: holding it there past max.poll.interval.ms makes the
    // consumer leave its group, and its next poll finds its partition lost
    val stall = new CountDownLatch(1)
    val stalled = new CountDownLatch(1)
    val values: Deserializer[String] = (_: String, data: Array[Byte]) =>
      val s = new String(data, "UTF-8")
      if s == "stall" then
        stalled.countDown()
        stall.await()
      s
    for
      topic <- TestBroker.topic(1)
      group = TestBroker.fresh("g")
      tp = new TopicPartition(topic, 0)
      _ <- TestBroker.produce(topic, List((0, "a", "run"), (0, "a", "queued"), (0, "b", "done")))
      runs <- IO.ref(0)
      firstRunning <- Deferred[IO, Unit]
      handler = (r: Rec) =>
        if r.value == "run" then
          runs.updateAndGet(_ + 1).flatMap(n =>
            if n == 1 then firstRunning.complete(()) *> IO.never else IO.unit
          )
        else IO.unit
      base = settings(topic, group)
      // a grace far longer than the test: a lost partition must not wait for it
      s = base.copy(revokeGrace = 1.minute, properties = base.properties + ("max.poll.interval.ms" -> "1000"))
      seen <- Ref[IO].of(Vector.empty[Out])
      stats <- KafkaSource
        .start[IO, String, String, Unit](s, new StringDeserializer, values)(src =>
          Pipeline(src).process(handler).withLimit(Limit.fixed(4))
        )
        .use { kafka =>
          kafka.outcomes.evalTap(o => seen.update(_ :+ o)).compile.drain.background.surround(
            for
              _ <- firstRunning.get
              // "done" finished above "run": the commit stays at 0 and names it
              _ <- eventually("the commit at 0 naming 2")(
                commitOf(group, tp).map(c => Option.when(c.contains((0L, "w1:2,1")))(()))
              )
              _ <- TestBroker.produce(topic, List((0, "c", "stall")))
              _ <- IO.blocking(stalled.await())
              _ <- eventually("the consumer to leave its group")(
                IO.blocking(
                  TestBroker.admin.describeConsumerGroups(List(group).asJava).all().get().get(group)
                )
                  .map(d => Option.when(d.members.isEmpty)(()))
              )
              _ <- IO(stall.countDown())
              _ <- committedTo(group, tp, 4L)
              st <- kafka.stats
            yield st
          )
        }
      all <- seen.get
    yield
      val first = all.filter(_.task.value != "stall").take(4)
      val interrupted = all.collect { case TaskOutcome.Failed(r, e, weir.Disposition.Interrupted, _) =>
        (r.value, e.getMessage)
      }
      assertEquals(
        interrupted.filter(_._1 != "stall"),
        Vector(("run", "task interrupted: partition lost")),
        s"$first"
      )
      // "stall", handed out by the poll before the one that finds the partition lost, may refuse too
      val refused = all.collect { case TaskOutcome.NotStarted(r, NotStartedReason.Refused(_)) => r.value }
      assertEquals(refused.filter(_ != "stall"), Vector("queued"))
      val succeeded = all.collect { case TaskOutcome.Succeeded(r, _, _) => r.value }
      // "done" ran once: the next assignment skipped it, as the commit's metadata said
      assertEquals(succeeded.filter(_ != "stall").sorted, Vector("done", "queued", "run"))
      assert(stats.revoked >= 1 && stats.skipped >= 1, s"$stats")
  }

  test(
    "a broker restart mid-run is survived: every record ends exactly once in the outcomes, and every partition is committed to its end"
  ) {
    val n = 200
    for
      topic <- TestBroker.topic(2)
      group = TestBroker.fresh("g")
      records = (0 until n).map(i => (i % 2, s"k${i % 10}", s"$i"))
      _ <- TestBroker.produce(topic, records.take(n / 2))
      base = settings(topic, group)
      // a commit or a metadata fetch against the stopped broker fails in seconds, not in the default minute
      s = base.copy(properties = base.properties ++ Map("default.api.timeout.ms" -> "5000"))
      restarted <- Deferred[IO, Unit]
      // the last records of the first half are still running while the broker restarts
      handler =
        (r: Rec) => if r.value.toInt >= n / 2 - 8 && r.value.toInt < n / 2 then restarted.get else IO.unit
      result <- running(s)(handler, _.withLimit(Limit.fixed(8))) { (kafka, seen) =>
        for
          _ <- outcomes(seen, n / 2 - 8)
          _ <- TestBroker.restart
          _ <- restarted.complete(())
          _ <- TestBroker.produce(topic, records.drop(n / 2))
          all <- eventually("every record to succeed", 60.seconds)(
            seen.get.map(os =>
              Option.when(os.collect { case TaskOutcome.Succeeded(r, _, _) =>
                (r.partition, r.offset)
              }.toSet.size == n)(os)
            )
          )
          _ <- (0 until 2).toList.traverse_(p => committedTo(group, new TopicPartition(topic, p), n / 2L))
          st <- kafka.stats
        yield (all, st)
      }
      (all, stats) = result
    yield
      val byRecord = all.groupBy(o => (o.task.partition, o.task.offset))
      assertEquals(byRecord.size, n)
      val twice = byRecord.filter(_._2.size > 1)
      assert(
        twice.isEmpty,
        s"records with more than one outcome: ${twice.keys.toVector.sorted.take(10)}; $stats"
      )
  }
