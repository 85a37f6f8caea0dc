package weir.postgres

/**
 * What [[Batches.cancel]] did to the members of its batch that had not ended: `cancelled` were waiting to
 * run and are now in `finished`, cancelled ([[Cancel.Cancelled]]); `requested` are running, and their
 * workers are told to interrupt them ([[Cancel.Requested]]); `ended` had ended meanwhile and were left as
 * they ended.
 */
final case class BatchCancel(cancelled: Int, requested: Int, ended: Int)
