package weir.lab.compare.approaches

import cats.effect.IO
import cats.effect.std.Queue
import cats.syntax.all.*
import fs2.Stream

/**
 * The write-up's approach 3 (`StreamQueueApp`): the same as the blocking queue but with a bounded Cats
 * Effect queue, which suspends the fiber instead of blocking the thread when full or empty.
 */
object EffectQueueApproach extends Approach:
  val name = "effect-queue"
  val summary = "a bounded Cats Effect queue between one producer and the consumers"

  def run(bench: Bench): IO[Unit] =
    Queue.bounded[IO, Option[Int]](bench.workload.buffer).flatMap { queue =>
      (
        (bench.producer.map(Some(_)) ++ Stream.emit(None)).evalMap(queue.offer).compile.drain,
        Stream.fromQueueNoneTerminated(queue).through(bench.ordered(bench.consume)).compile.drain
      ).parTupled.void
    }
