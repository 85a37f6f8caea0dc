package weir.lab.compare.approaches

import cats.effect.IO

/**
 * Not in the write-up: [[StreamApproach]] with `parEvalMapUnordered`, to show what the ordered
 * `parEvalMap` that every write-up approach uses costs. An ordered `parEvalMap(n)` holds at most about `n`
 * results behind the oldest unfinished task, so one slow task stops new starts (head-of-line blocking);
 * the unordered form starts a task whenever one of its `n` slots is free.
 */
object UnorderedStreamApproach extends Approach:
  val name = "stream-unordered"
  val summary = "parEvalMapUnordered straight off the producer stream"

  def run(bench: Bench): IO[Unit] =
    bench.producer.parEvalMapUnordered(bench.workload.slots)(bench.consume).compile.drain
