package weir.postgres

/**
 * An operation named a batch that the schema does not hold: it was never opened there (a batch's id is
 * drawn per schema), or its row was pruned after it ended (see [[Retention.batches]]).
 */
final class UnknownBatch(val batch: BatchId, val schema: Schema)
    extends IllegalArgumentException(
      s"unknown batch ${batch.value}: schema '${schema.name}' holds no batch with this id (never opened there, " +
        "or pruned after it ended)"
    )
