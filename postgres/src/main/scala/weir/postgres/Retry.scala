package weir.postgres

/** What [[TaskActions.retry]] did. */
enum Retry:
  /** The task was dead or cancelled; it is back to run now, with a fresh set of attempts. */
  case Retried

  /** The task is in `state`, which a retry does not apply to (only a dead or cancelled task is retried). */
  case Refused(state: TaskState)

  /** The task is dead or cancelled, but an unfinished task of its queue holds its unique key; it stays. */
  case KeyHeld

  /** No task has this id. */
  case NotFound
