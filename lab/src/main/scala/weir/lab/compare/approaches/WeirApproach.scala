package weir.lab.compare.approaches

import cats.effect.IO
import weir.*
import weir.lab.compare.scenarios.Workload

/**
 * weir itself: the producers as a partitioned [[Source]], the workload's slots as a fixed [[Limit]] and
 * its buffer as the pipeline's buffer; outcomes unordered (weir's default).
 */
object WeirApproach extends Approach:
  val name = "weir"
  val summary = "weir's Pipeline: partitioned source, Limit.fixed(slots), buffer, unordered"
  override def producers(workload: Workload): Int = workload.producers

  def run(bench: Bench): IO[Unit] =
    val n = producers(bench.workload)
    Pipeline(Source.partitioned(n)(p => bench.producer(p, n)))
      .process(bench.consume)
      .withLimit(Limit.fixed(bench.workload.slots))
      .withBuffer(bench.workload.buffer)
      .run
      .flatMap(s =>
        IO.raiseUnless(s.allSucceeded)(new IllegalStateException(s"weir did not run every task: $s"))
      )
