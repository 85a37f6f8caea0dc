package weir.lab.compare.approaches

import cats.effect.IO
import cats.effect.syntax.all.*

/**
 * The write-up's approach 1 (`BatchIOApp`): produce one batch, consume all of it in parallel, and only then
 * produce the next. Producing and consuming never overlap, and every batch waits for its slowest task.
 */
object BatchApproach extends Approach:
  val name = "batch"
  val summary = "one batch at a time: produce it, consume it in parallel, wait for all of it"

  def run(bench: Bench): IO[Unit] =
    def loop(b: Int): IO[Unit] =
      if b >= bench.workload.batches then IO.unit
      else
        bench.produceBatch(b).flatMap(_.toList.parTraverseN(bench.workload.slots)(bench.consume)) *>
          loop(b + 1)
    loop(0)
