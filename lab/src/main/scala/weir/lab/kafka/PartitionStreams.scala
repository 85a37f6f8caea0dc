package weir.lab.kafka

import cats.effect.{IO, Resource}
import cats.effect.std.Queue
import cats.syntax.all.*
import fs2.{Chunk, Stream}
import org.apache.kafka.clients.consumer.{ConsumerRecord, KafkaConsumer, OffsetAndMetadata}
import org.apache.kafka.common.TopicPartition

import java.time.Duration as JDuration
import java.util.concurrent.Executors
import scala.concurrent.ExecutionContext
import scala.concurrent.duration.*
import scala.jdk.CollectionConverters.*

/**
 * The FS2 baseline, in the shape of fs2-kafka's `partitionedStream` with `parEvalMap` per partition
 * (`stream.partitionedStream.map(_.evalMap(handle)).parJoinUnbounded.through(commitBatchWithin(…))`): one
 * stream per partition, its records handled in offset order, the partitions' streams run in parallel, and
 * the handled offsets committed in batches. It is written over kafka-clients because fs2-kafka is not
 * served by this machine's package registry: one thread owns the consumer, polls, and hands each
 * partition's records to that partition's queue, pausing a partition whose queue is full.
 */
object PartitionStreams:

  private type Rec = ConsumerRecord[String, String]

  /** Chunks (one poll's records of a partition) a partition's queue holds before the poll loop waits. */
  private val prefetch = 2

  def resource(s: ConsumerSettings, recorder: Recorder): Resource[IO, Consuming] =
    for
      ec <- Resource
        .make(IO(Executors.newSingleThreadExecutor(r =>
          Thread.ofPlatform().daemon(true).name("fs2-consumer").unstarted(r)
        )))(e =>
          IO(e.shutdown())
        )
        .map(ExecutionContext.fromExecutorService)
      consumer <- Resource.make(IO(new KafkaConsumer[String, String](s.javaProperties)).evalOn(ec))(c =>
        IO(c.close()).evalOn(ec)
      )
      _ <- Resource.eval(IO(consumer.subscribe(List(s.topic).asJava)).evalOn(ec))
      partitions <- Resource.eval(Queue.unbounded[IO, Stream[IO, (TopicPartition, Long)]])
      queues <- Resource.eval(IO.ref(Map.empty[TopicPartition, Queue[IO, Chunk[Rec]]]))
      sleep = s.sleepMillis.millis
      handle = (r: Rec) =>
        IO(recorder.started()).flatMap(start =>
          IO.sleep(sleep).whenA(s.sleepMillis > 0) *>
            IO(recorder.finished(r.partition, r.offset, r.key, start))
        ).as(new TopicPartition(r.topic, r.partition) -> r.offset)
      // the queue of a partition seen for the first time is created, and its stream started, here
      queueOf = (tp: TopicPartition) =>
        queues.get.flatMap(_.get(tp) match
          case Some(q) => IO.pure(q)
          case None =>
            Queue.unbounded[IO, Chunk[Rec]].flatTap { q =>
              queues.update(_ + (tp -> q)) *>
                partitions.offer(Stream.fromQueueUnterminatedChunk(q).evalMap(handle))
            })
      // a partition with `prefetch` chunks waiting is paused, and resumed once fewer wait, so that the loop
      // keeps polling the other partitions (as fs2-kafka pauses a partition whose prefetch is full)
      poll = queues.get.flatMap(_.toList.traverse((tp, q) => q.size.map(n => (tp, n >= prefetch)))).flatMap(
        sizes =>
          IO {
            consumer.pause(sizes.collect { case (tp, true) => tp }.asJava)
            consumer.resume(sizes.collect { case (tp, false) => tp }.filter(consumer.paused.contains).asJava)
            consumer.poll(JDuration.ofMillis(s.pollMillis.toLong))
          }.evalOn(ec)
      ).flatMap(records =>
        records.partitions.asScala.toList.traverse_(tp =>
          queueOf(tp).flatMap(_.offer(Chunk.from(records.records(tp).asScala)))
        )
      )
      commit = (batch: Chunk[(TopicPartition, Long)]) =>
        val offsets = batch.foldLeft(Map.empty[TopicPartition, Long])((m, o) =>
          m.updated(o._1, o._2.max(m.getOrElse(o._1, -1L)))
        )
        IO(consumer.commitAsync(offsets.map((tp, o) => tp -> new OffsetAndMetadata(o + 1)).asJava, null))
          .evalOn(ec)
      _ <- poll.foreverM.background
      _ <- Stream
        .fromQueueUnterminated(partitions)
        .parJoinUnbounded
        .groupWithin(500, 1.second)
        .evalMap(commit)
        .compile
        .drain
        .background
    yield new Consuming:
      def revocations: IO[Long] = IO.pure(0L)
