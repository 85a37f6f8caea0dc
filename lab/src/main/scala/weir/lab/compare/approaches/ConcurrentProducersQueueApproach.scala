package weir.lab.compare.approaches

import cats.effect.{IO, Ref}
import cats.effect.std.Queue
import cats.syntax.all.*
import fs2.Stream
import weir.lab.compare.scenarios.Workload

/**
 * The write-up's approach 5 (`ConcurrentProduceQueueApp`): several producers feed one bounded Cats Effect
 * queue; the consumers count completed tasks and stop after the last one.
 */
object ConcurrentProducersQueueApproach extends Approach:
  val name = "concurrent-producers-queue"
  val summary = "several producers into one bounded effect queue; consumers stop at the task count"
  override def producers(workload: Workload): Int = workload.producers

  def run(bench: Bench): IO[Unit] =
    val n = producers(bench.workload)
    val total = bench.workload.tasks
    (Queue.bounded[IO, Int](bench.workload.buffer), Ref.of[IO, Int](0)).flatMapN { (queue, done) =>
      val produce = (0 until n).toList.map(p => bench.producer(p, n).evalMap(queue.offer).compile.drain)
      val consume = Stream.fromQueueUnterminated(queue)
        .through(bench.ordered(i =>
          bench.consume(i) *> done.updateAndGet(_ + 1).map(d => Option.when(d < total)(()))
        ))
        .unNoneTerminate
        .compile
        .drain
      (consume :: produce).parSequence_
    }
