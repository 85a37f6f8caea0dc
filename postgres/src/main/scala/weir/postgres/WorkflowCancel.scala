package weir.postgres

/**
 * What [[Workflows.cancel]] did to the tasks of its workflow that had not ended: `cancelled` were waiting to
 * run and are now in `finished`, cancelled ([[Cancel.Cancelled]]); `requested` are running, and their
 * workers are told to interrupt them ([[Cancel.Requested]]); `ended` had ended meanwhile and were left as
 * they ended.
 */
final case class WorkflowCancel(cancelled: Int, requested: Int, ended: Int)
