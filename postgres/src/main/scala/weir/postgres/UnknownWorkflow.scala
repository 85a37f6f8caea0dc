package weir.postgres

/**
 * An operation named a workflow that the schema does not hold: no task of it names the workflow (no graph
 * was enqueued there with this first task, no task waited for the task of this id), or its tasks' rows are
 * gone (pruned after they finished).
 */
final class UnknownWorkflow(val workflow: WorkflowId, val schema: Schema)
    extends IllegalArgumentException(
      s"unknown workflow ${workflow.value}: schema '${schema.name}' holds no task of a workflow with this id " +
        "(no graph began with this task, no task waited for it, or its tasks were pruned)"
    )
