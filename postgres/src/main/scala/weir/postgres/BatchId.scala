package weir.postgres

/**
 * A batch's id ([[Batches]]), drawn by [[Batches.open]]: its own type, so that a batch's id and a task's
 * are never swapped without the compiler saying so.
 */
final case class BatchId(value: Long):
  override def toString: String = s"batch $value"
