package weir.postgres

/**
 * A count that stops at a cap, so that it costs at most the cap however many rows there are: `n` rows,
 * exactly, or the cap when `atLeast` (there are more).
 */
final case class CappedCount(n: Long, atLeast: Boolean)

object CappedCount:

  /** `counted` rows, counted up to `cap + 1` (one more, to know whether there are more than `cap`). */
  def of(counted: Long, cap: Int): CappedCount = CappedCount(counted.min(cap.toLong), counted > cap)
