package weir.lab.blocking

/**
 * What seed 003's runs are measured against. Every task blocks its thread for the same `duration`; with
 * a thread for each, nothing waits for a thread and the run takes one task's duration.
 */
object Ideal:

  /** The ideal makespan: one task's duration when nothing starves (0 when there are no tasks). */
  def makespan(tasks: Int, duration: Long): Long =
    require(tasks >= 0, s"tasks must be >= 0, was: $tasks")
    require(duration >= 0, s"duration must be >= 0, was: $duration")
    if tasks == 0 then 0L else duration

  /**
   * The makespan when only `threads` tasks can block at once: ⌈tasks / threads⌉ rounds of one duration
   * (what a starved pool is bound to take, with no overhead).
   */
  def withThreads(tasks: Int, duration: Long, threads: Int): Long =
    require(threads > 0, s"threads must be > 0, was: $threads")
    require(tasks >= 0, s"tasks must be >= 0, was: $tasks")
    require(duration >= 0, s"duration must be >= 0, was: $duration")
    ((tasks + threads - 1) / threads).toLong * duration
