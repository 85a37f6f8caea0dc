package weir.postgres

import java.time.Instant

/**
 * Tasks were enqueued into a batch that is closed (by [[Batches.close]] or [[Batches.cancel]]): a closed
 * batch takes no member, since its callback may already have been released. Nothing of the enqueue is kept.
 */
final class BatchClosed(val batch: BatchId, val closedAt: Instant)
    extends IllegalStateException(
      s"batch ${batch.value} is closed (since $closedAt): no member can be added to it; open another batch"
    )
