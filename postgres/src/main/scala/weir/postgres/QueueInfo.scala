package weir.postgres

import java.time.Instant

/**
 * A queue's controls as every worker obeys them ([[QueueControls.pause]], [[QueueControls.limitRunning]],
 * [[QueueControls.limitRate]]), with its tasks running now (claimed and not finished, in every process) and
 * when the controls last changed. Listed by [[Overview.queues]].
 */
final case class QueueInfo(
    name: String,
    paused: Boolean,
    maxRunning: Option[Int],
    rate: Option[QueueRate],
    running: Long,
    updatedAt: Instant
)
