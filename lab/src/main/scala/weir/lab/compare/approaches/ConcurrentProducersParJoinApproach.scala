package weir.lab.compare.approaches

import cats.effect.IO
import fs2.Stream
import weir.lab.compare.scenarios.Workload

/**
 * The write-up's approach 5, second form (`ConcurrentProducerApp`): the producer streams merged with
 * `parJoin`, then `prefetch` and `parEvalMap`.
 */
object ConcurrentProducersParJoinApproach extends Approach:
  val name = "concurrent-producers-parjoin"
  val summary = "several producer streams merged with parJoin, then prefetch and parEvalMap"
  override def producers(workload: Workload): Int = workload.producers

  def run(bench: Bench): IO[Unit] =
    val n = producers(bench.workload)
    Stream.range(0, n).map(p => bench.producer(p, n)).parJoin(n)
      .prefetch
      .through(bench.ordered(bench.consume))
      .compile
      .drain
