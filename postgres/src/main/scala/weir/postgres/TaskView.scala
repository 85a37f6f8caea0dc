package weir.postgres

/**
 * What a task's page shows, read at once ([[TaskBrowser.view]]): the task, the live tasks of its key around
 * it, and the newest entries of the audit log that name it.
 *
 * @param neighbours [[KeyNeighbours.none]] for a task without an ordering key
 * @param actions the newest first
 */
final case class TaskView(task: TaskDetail, neighbours: KeyNeighbours, actions: Vector[AuditEntry])
