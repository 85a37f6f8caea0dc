package weir

import scala.concurrent.duration.*

/** The values a pipeline uses unless told otherwise. */
object Defaults:

  /** Tasks in flight at once. */
  val concurrency: Int = 64

  /** Tasks buffered between the producers and the workers, counted in elements. */
  val bufferCapacity: Int = 1024

  /** Outcomes held back at most to restore input order. */
  val reorderWindow: Int = 1024

  /** Outcomes buffered between the workers and a consumer of [[Pipeline.outcomes]]. */
  val outcomeBuffer: Int = 1024

  /** How long [[Running]]'s release lets in-flight tasks finish before interrupting them. */
  val releaseGrace: FiniteDuration = Duration.Zero
