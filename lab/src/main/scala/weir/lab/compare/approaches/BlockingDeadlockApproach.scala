package weir.lab.compare.approaches

import cats.effect.IO
import cats.syntax.all.*
import fs2.Stream

import java.util.concurrent.LinkedBlockingQueue

/**
 * The write-up's `RealBlockingQueueApp`: the blocking queue with two consuming streams started before the
 * producer, on a compute pool of two fixed threads. Both consumers block their thread in `take` on the
 * empty queue, so the producer never runs: a deadlock. The runner runs it in real time on its own pool
 * ([[Placement.FixedPool]]), bounded by a timeout, reports it as "deadlocked" and interrupts the threads.
 */
object BlockingDeadlockApproach extends Approach:
  val name = "blocking-deadlock"
  val summary = "the blocking queue with two consumer streams on two fixed threads (deadlocks)"
  override val placement: Placement = Placement.FixedPool(2)

  def run(bench: Bench): IO[Unit] =
    IO(new LinkedBlockingQueue[Option[Int]](bench.workload.buffer)).flatMap { queue =>
      val consumer = Stream.repeatEval(IO(queue.take())).unNoneTerminate
        .parEvalMap(bench.workload.slots)(bench.consume).compile.drain
      // each consumer stream stops at the first None: send one per consumer
      val producer = (bench.producer.map(Some(_)) ++ Stream(None, None)).evalMap(a =>
        IO(queue.put(a))
      ).compile.drain
      List(consumer, consumer, producer).parSequence_
    }
