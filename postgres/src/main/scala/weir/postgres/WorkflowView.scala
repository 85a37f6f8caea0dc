package weir.postgres

/**
 * A workflow as it stands ([[TaskBrowser.workflow]]), read in one statement: how many of its tasks are in
 * each state (`counts`, every task of the workflow counted), and its first tasks in id order (`tasks`, at
 * most the read's limit). A task's parents have smaller ids than it has, so the tasks listed hold the
 * parents of each of them that are in the workflow, and each one's [[WorkflowTask.layer]] is exact.
 *
 * A workflow's tasks are the tasks enqueued together as one [[TaskGraph]], with the tasks enqueued later that
 * wait for any of them; a task that waits for tasks of several workflows joins the oldest one (ADR 0053).
 */
final case class WorkflowView(id: WorkflowId, counts: Map[TaskState, Long], tasks: Vector[WorkflowTask]):

  /** How many tasks the workflow has. */
  def total: Long = counts.values.sum

  /** How many of them have finished, whatever their outcome. */
  def finished: Long = counts.collect { case (s, n) if !s.live => n }.sum

  /** Every task has finished. */
  def ended: Boolean = finished == total

  /** Some tasks are not listed: the workflow has more than the read's limit. */
  def truncated: Boolean = tasks.size < total

  /** The tasks listed, by layer from the roots (layer 0), each layer in id order. */
  def layers: Vector[Vector[WorkflowTask]] =
    tasks.groupBy(_.layer).toVector.sortBy(_._1).map(_._2.sortBy(_.id))

/**
 * A task of a workflow: its id, queue and state; its parents (`after`, every task it waits or waited for, in
 * the order its enqueue named them, some perhaps outside the workflow); its `layer`, the length of the
 * longest path to it from a task of the workflow that waits for none of the workflow's (0 for those); its
 * attempt and attempts allowed; whether it completed with a stored result; its batch, if it is a member of
 * one.
 */
final case class WorkflowTask(
    id: Long,
    queue: String,
    state: TaskState,
    after: Vector[Long],
    layer: Int,
    attempt: Int,
    maxAttempts: Int,
    result: Boolean,
    batch: Option[BatchId]
)

object WorkflowView:

  /**
   * The layer of each task of `tasks` (each with its id and parents), listed in id order, so that a task's
   * parents in the list come before it: 0 without parents in the list, else one more than its parents'
   * deepest.
   */
  def layers(tasks: Vector[(Long, Vector[Long])]): Vector[Int] =
    val found = scala.collection.mutable.HashMap.empty[Long, Int]
    tasks.map { (id, after) =>
      val layer = after.flatMap(found.get).maxOption.fold(0)(_ + 1)
      found(id) = layer
      layer
    }
