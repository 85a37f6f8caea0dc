package weir.lab.compare.approaches

import cats.effect.IO

/**
 * The write-up's approach 4 (`StreamApp`): `parEvalMap` straight off the producer stream. `parEvalMap`
 * keeps the input order, and the producer only makes the next batch when pulled.
 */
object StreamApproach extends Approach:
  val name = "stream"
  val summary = "parEvalMap (ordered) straight off the producer stream"

  def run(bench: Bench): IO[Unit] =
    bench.producer.through(bench.ordered(bench.consume)).compile.drain
