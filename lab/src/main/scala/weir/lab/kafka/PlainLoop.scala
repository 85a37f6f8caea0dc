package weir.lab.kafka

import cats.effect.{IO, Resource}
import org.apache.kafka.clients.consumer.{ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata}
import org.apache.kafka.common.TopicPartition
import org.apache.kafka.common.errors.WakeupException

import java.time.Duration as JDuration
import java.util.Collection as JCollection
import java.util.concurrent.{ConcurrentHashMap, ExecutorService, Executors}
import java.util.concurrent.atomic.AtomicInteger
import scala.jdk.CollectionConverters.*

/**
 * The plain `kafka-clients` baseline: the multi-threaded consumer of Kafka's documentation. One thread
 * polls; each partition has a worker thread of its own that handles its records in offset order (partitions
 * in parallel, one record of a partition at a time); a partition whose worker has `backlog` records waiting
 * is paused, and resumed once they are done, so that the loop keeps polling the others. The offsets the
 * workers finished are committed after each poll.
 */
object PlainLoop:

  private val backlog = 1000

  def resource(s: ConsumerSettings, recorder: Recorder): Resource[IO, Consuming] =
    for
      consumer <- Resource.eval(IO.blocking(new KafkaConsumer[String, String](s.javaProperties)))
      // the loop's thread owns the consumer (which is not thread-safe) and closes it as it ends
      _ <- Resource.make(IO(
        Thread.ofPlatform().name("plain-consumer").daemon(true).start(() =>
          new Loop(consumer, s, recorder).run()
        )
      ))(t => IO(consumer.wakeup()) *> IO.interruptible(t.join(5000)))
    yield new Consuming:
      def revocations: IO[Long] = IO.pure(0L)

  private final class Loop(consumer: KafkaConsumer[String, String], s: ConsumerSettings, recorder: Recorder):
    private val workers = new ConcurrentHashMap[TopicPartition, ExecutorService]
    private val waiting = new ConcurrentHashMap[TopicPartition, AtomicInteger]
    private val done = new ConcurrentHashMap[TopicPartition, java.lang.Long]

    private def worker(tp: TopicPartition): ExecutorService =
      workers.computeIfAbsent(
        tp,
        _ => Executors.newSingleThreadExecutor(r => Thread.ofPlatform().daemon(true).unstarted(r))
      )

    def run(): Unit =
      try
        consumer.subscribe(
          List(s.topic).asJava,
          new ConsumerRebalanceListener:
            def onPartitionsAssigned(ps: JCollection[TopicPartition]): Unit = ()
            // a partition handed on stops here: its queued records are dropped, its finished ones committed
            def onPartitionsRevoked(ps: JCollection[TopicPartition]): Unit =
              ps.forEach { tp =>
                Option(workers.remove(tp)).foreach(_.shutdownNow().size: Unit)
                waiting.remove(tp): Unit
              }
              commit()
        )
        while true do
          val records = consumer.poll(JDuration.ofMillis(s.pollMillis.toLong))
          records.partitions.forEach { tp =>
            val rs = records.records(tp)
            waiting.computeIfAbsent(tp, _ => new AtomicInteger).addAndGet(rs.size): Unit
            worker(tp).execute { () =>
              // a worker is interrupted when its partition is revoked or the loop ends: its records stop there
              try
                rs.forEach { r =>
                  val start = recorder.started()
                  if s.sleepMillis > 0 then Thread.sleep(s.sleepMillis.toLong)
                  recorder.finished(r.partition, r.offset, r.key, start)
                  done.put(tp, r.offset + 1): Unit
                  waiting.get(tp) match
                    case null => ()
                    case n => n.decrementAndGet(): Unit
                }
              catch case _: InterruptedException => ()
            }
          }
          val (full, free) = waiting.asScala.partition(_._2.get >= backlog)
          consumer.pause(full.keys.asJavaCollection)
          consumer.resume(free.keys.filter(consumer.paused.contains).asJavaCollection)
          commit()
      catch case _: WakeupException | _: InterruptedException => ()
      finally
        workers.values.forEach(_.shutdownNow().size: Unit)
        consumer.close()

    private def commit(): Unit =
      if !done.isEmpty then
        val offsets = done.asScala.map((tp, o) => tp -> new OffsetAndMetadata(o.longValue)).toMap
        done.clear()
        consumer.commitAsync(offsets.asJava, null)
