package weir.postgres

/**
 * A workflow's id: the id of its first task (migration 14; see [[WorkflowView]]). Its own type, so that a
 * workflow's id and a task's are never swapped without the compiler saying so, although their numbers meet.
 */
final case class WorkflowId(value: Long):
  override def toString: String = s"workflow $value"
