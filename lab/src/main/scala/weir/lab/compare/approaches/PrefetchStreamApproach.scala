package weir.lab.compare.approaches

import cats.effect.IO

/**
 * The write-up's approach 4, second form (`PrefetchStreamApp`): the producer stream with `prefetch` (one
 * chunk, here one batch, made ahead while the consumers are busy), then `parEvalMap`.
 */
object PrefetchStreamApproach extends Approach:
  val name = "prefetch-stream"
  val summary = "the stream with prefetch: the next batch is produced while the current one is consumed"

  def run(bench: Bench): IO[Unit] =
    bench.producer.prefetch.through(bench.ordered(bench.consume)).compile.drain
