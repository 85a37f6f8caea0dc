package weir.postgres

import doobie.ConnectionIO
import weir.postgres.internal.{GraphEnqueue, Graphs}

/**
 * Tasks enqueued together, some waiting for others: each is named by a handle of the caller's, unique in
 * the graph, and waits for the tasks of the graph that its `after` names by handle (besides the existing
 * tasks its [[NewTask.after]] names by id). The tasks may be of any queues of one schema, each added
 * through its queue, which encodes its payload. Immutable: [[add]] returns a graph with one more task.
 *
 * {{{
 * val graph = TaskGraph.empty
 *   .add("fetch-a", fetches, NewTask(Fetch("a")))
 *   .add("fetch-b", fetches, NewTask(Fetch("b")))
 *   .add("merge", merges, NewTask(Merge()), after = Vector(After.completed("fetch-a"), After.completed("fetch-b")))
 * graph.enqueue(db) // IO[Map[String, Enqueued]]: each handle's task
 * }}}
 *
 * The graph's tasks are one workflow ([[WorkflowId]], read with [[TaskBrowser.workflow]]): the workflow of
 * the existing tasks they wait for (the oldest, when those are in several), or else the one named by the id
 * of the graph's first task.
 *
 * Enqueued in one transaction ([[enqueue]], or [[enqueueIn]] inside the caller's): the graph's tasks and
 * edges commit together or not at all, and a dependent is claimed only once its parents have ended as it
 * asks ([[After]]). A task whose unique key is held inserts nothing and stands for its holder
 * ([[Enqueued.Duplicate]]): the tasks of the graph that wait for it wait for the holder.
 *
 * Blocks: the enqueue locks the existing parents that have not ended (`FOR KEY SHARE`) until its
 * transaction commits, so that none ends before its dependents' edges exist: it waits for a parent's end in
 * progress, and a parent's end (its worker's result) waits for it. Concurrent enqueues are allowed; two
 * that name a parent not marked yet take turns to mark it.
 *
 * Errors, as one [[weir.InvalidSettings]] naming each task, before anything is inserted: a task's own
 * ([[NewTask.errors]], its queue's name), an empty or repeated handle, an `after` that names no task of the
 * graph or one twice, a cycle (its tasks named in order), a task whose queue is of another schema than the
 * one the graph is enqueued into, and an existing parent that no task of the schema is (or whose row is
 * gone: completed without `keepCompleted`, or pruned).
 */
final class TaskGraph private (private[postgres] val nodes: Vector[Graphs.Node]):

  /**
   * This graph and the task `handle`: `task` for `queue`, waiting for the tasks of the graph that `after`
   * names (added before or after it). Throws nothing: the enqueue checks the whole graph.
   */
  def add[F[_], A](
      handle: String,
      queue: TaskQueue[F, A],
      task: NewTask[A],
      after: Seq[After[String]] = Nil
  ): TaskGraph =
    new TaskGraph(
      nodes :+ Graphs.Node(
        label = s"task '$handle'",
        handle = handle,
        queue = queue.name,
        schema = queue.schema,
        task = queue.encoded(task),
        errors = queue.nameErrors ++ task.errors,
        parents = task.after,
        after = after.toVector
      )
    )

  /** The handles of the graph's tasks, in the order they were added. */
  def handles: Vector[String] = nodes.map(_.handle)

  /**
   * What is wrong with this graph as [[enqueue]] into `schema` would find it before it writes, each error
   * naming its task; empty when it can be enqueued (an existing parent's id is checked by the enqueue).
   */
  def errors(schema: Schema): List[String] = Graphs.errors(nodes, schema)

  /** Enqueues the graph into `db` in a transaction of its own: each handle's [[Enqueued]]. */
  def enqueue[F[_]](db: Database[F]): F[Map[String, Enqueued]] = db.run(enqueueIn(db.schema))

  /** Enqueues the graph into `schema` as part of the caller's transaction: each handle's [[Enqueued]]. */
  def enqueueIn(schema: Schema): ConnectionIO[Map[String, Enqueued]] =
    GraphEnqueue(schema, nodes, "TaskGraph", oneWorkflow = true).map(results =>
      nodes.map(_.handle).zip(results).toMap
    )

  override def toString: String = s"TaskGraph(${handles.mkString(", ")})"

object TaskGraph:

  /** A graph without tasks, to [[TaskGraph.add]] them to. */
  val empty: TaskGraph = new TaskGraph(Vector.empty)
