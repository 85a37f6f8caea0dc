package weir.postgres

/** What [[TaskActions.discard]] did. */
enum Discard:
  /** The task was dead or cancelled; it is deleted. */
  case Discarded

  /** The task is in `state`, which a discard does not apply to (only a dead or cancelled task is deleted). */
  case Refused(state: TaskState)

  /** No task has this id. */
  case NotFound
