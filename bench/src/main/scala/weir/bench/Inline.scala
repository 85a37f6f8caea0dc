package weir.bench

/** The thread baselines: `task` run `n` times in a plain loop on the calling thread. */
object Inline:
  def run(n: Int, task: Runnable): Unit =
    var i = 0
    while i < n do
      task.run()
      i += 1
