package weir

import scala.concurrent.duration.*

/** The values a pipeline uses unless told otherwise. */
object Defaults:

  /** Tasks in flight at once. */
  val concurrency: Int = 64

  /** Tasks buffered between the producers and the workers, counted in elements. */
  val bufferCapacity: Int = 1024

  /**
   * Outcomes held back at most to restore input order, when [[TaskOrder.inputOrder]] is not given a window:
   * four times the run's initial limit, within [1024, 65536]. A window close to the limit would stall new
   * starts behind every straggler; four times the limit leaves room for three limits' worth of tasks to
   * overtake it.
   */
  def reorderWindow(limit: Int): Int = math.max(1024, math.min(4L * limit, 65536L).toInt)

  /**
   * Failed tasks a [[Summary]] keeps, the last ones ([[Pipeline.withFailureSample]]): enough to see what
   * is failing and why, few enough that a run failing tasks for weeks keeps a small summary.
   */
  val failureSample: Int = 100

  /** Outcomes buffered between the workers and a consumer of [[Pipeline.outcomes]]. */
  val outcomeBuffer: Int = 1024

  /** How long [[Running]]'s release lets in-flight tasks finish before interrupting them. */
  val releaseGrace: FiniteDuration = Duration.Zero
