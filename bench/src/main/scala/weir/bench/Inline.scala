package weir.bench

import org.openjdk.jmh.infra.Blackhole

/**
 * The thread baselines: `task` run `n` times in a plain loop on the calling thread, each iteration's
 * index sunk into `bh` so that the JIT cannot delete the loop when the task does nothing.
 */
object Inline:
  def run(n: Int, task: Runnable, bh: Blackhole): Unit =
    var i = 0
    while i < n do
      task.run()
      bh.consume(i)
      i += 1
