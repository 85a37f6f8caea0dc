package weir.postgres

/** What [[TaskActions.cancel]] did. */
enum Cancel:
  /** The task was waiting to run; it is now in `finished`, cancelled. */
  case Cancelled

  /** The task is running: its worker is told to interrupt it, and it ends cancelled (or completed, if first). */
  case Requested

  /** The task had already finished, as `state`; nothing changed. */
  case Finished(state: FinishedState)

  /** No task has this id. */
  case NotFound
