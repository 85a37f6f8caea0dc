package weir.lab.compare.approaches

import cats.effect.{IO, Ref}
import cats.effect.std.Semaphore
import cats.syntax.all.*
import fs2.Chunk
import fs2.concurrent.SignallingRef
import weir.lab.compare.scenarios.Workload

import scala.collection.immutable.Queue as ScalaQueue

/**
 * The design the write-up only sketches under "More": a queue per consumer instead of one shared queue.
 * Producers deal each batch round-robin over the consumers' queues; a consumer takes from its own queue and,
 * when that is empty, steals half of the first non-empty queue after its own. At most the workload's buffer
 * of tasks wait in all the queues together (producers wait for room). Consumers with nothing to take or
 * steal sleep until a producer adds work or the last producer ends.
 */
object WorkStealingApproach extends Approach:
  val name = "work-stealing"
  val summary = "a queue per consumer; producers deal tasks round-robin, idle consumers steal half"
  override def producers(workload: Workload): Int = workload.producers

  def run(bench: Bench): IO[Unit] =
    val w = bench.workload
    val n = producers(w)
    val slots = w.slots
    (
      List.fill(slots)(Ref.of[IO, ScalaQueue[Int]](ScalaQueue.empty)).sequence.map(_.toVector),
      Semaphore[IO](w.buffer.toLong),
      SignallingRef[IO, Long](0L), // bumped whenever work is added or a producer ends
      Ref.of[IO, Int](n), // producers still running
      Ref.of[IO, Int](0) // where the next task is dealt
    ).flatMapN { (queues, room, changes, producing, cursor) =>
      def deal(tasks: Chunk[Int]): IO[Unit] =
        tasks.toList.grouped(w.buffer).toList.traverse_ { part =>
          room.acquireN(part.size.toLong) *>
            cursor.getAndUpdate(c => (c + part.size) % slots).flatMap { from =>
              part.zipWithIndex.groupMap((_, k) => (from + k) % slots)(_._1).toList.traverse_ { (q, ts) =>
                queues(q).update(_.enqueueAll(ts))
              }
            } *> changes.update(_ + 1)
        }

      def produce(p: Int): IO[Unit] =
        bench.producer(p, n).chunks.evalMap(deal).compile.drain *> producing.update(_ - 1) *>
          changes.update(_ + 1)

      def takeOwn(me: Int): IO[Option[Int]] =
        queues(me).modify(q => q.dequeueOption.fold((q, Option.empty[Int]))((t, rest) => (rest, Some(t))))

      /** Takes half of the first non-empty queue after `me`'s; keeps all but one in its own queue. */
      def steal(me: Int): IO[Option[Int]] =
        def from(k: Int): IO[Option[Int]] =
          if k >= slots then IO.pure(None)
          else
            val victim = (me + k) % slots
            queues(victim).modify { q =>
              val take = (q.size + 1) / 2
              (q.drop(take), q.take(take).toList)
            }.flatMap {
              case Nil => from(k + 1)
              case first :: more => queues(me).update(_.enqueueAll(more)).as(Some(first))
            }
        from(1)

      def consumer(me: Int): IO[Unit] =
        (changes.get, producing.get).flatMapN { (seen, stillProducing) =>
          takeOwn(me).flatMap {
            case Some(t) => IO.some(t)
            case None => steal(me)
          }.flatMap {
            case Some(t) => room.release *> bench.consume(t) *> consumer(me)
            case None =>
              if stillProducing == 0 then IO.unit // nothing left anywhere and nothing more will come
              else changes.waitUntil(_ != seen) *> consumer(me)
          }
        }

      ((0 until slots).toList.map(consumer) ++ (0 until n).toList.map(produce)).parSequence_
    }
