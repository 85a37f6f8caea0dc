package weir.postgres

/** The states of a finished task: the [[TaskState]]s that are not live, named as they are. */
enum FinishedState(val state: TaskState):
  case Completed extends FinishedState(TaskState.Completed)
  case Dead extends FinishedState(TaskState.Dead)
  case Cancelled extends FinishedState(TaskState.Cancelled)

  /** The stored name, [[TaskState.name]]. */
  def name: String = state.name

object FinishedState:

  /** The finished state that `state` is; `None` for a live one. */
  def of(state: TaskState): Option[FinishedState] = values.find(_.state == state)
