package weir.postgres

/**
 * What the cancel of a group of tasks — a workflow ([[Workflows.cancel]]) or a batch ([[Batches.cancel]]) —
 * did to those that had not ended: `cancelled` were waiting to run and are now in `finished`, cancelled
 * ([[Cancel.Cancelled]]); `requested` are running, and their workers are told to interrupt them
 * ([[Cancel.Requested]]); `ended` had ended meanwhile and were left as they ended.
 */
final case class GroupCancel(cancelled: Int, requested: Int, ended: Int)

object GroupCancel:

  /** The counts of the answers of one cancel of several tasks ([[TaskActions.cancelMany]]'s). */
  def of(outcomes: Seq[Cancel]): GroupCancel =
    GroupCancel(
      cancelled = outcomes.count(_ == Cancel.Cancelled),
      requested = outcomes.count(_ == Cancel.Requested),
      ended = outcomes.count(o => o != Cancel.Cancelled && o != Cancel.Requested)
    )
