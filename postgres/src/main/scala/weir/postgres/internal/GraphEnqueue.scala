package weir.postgres.internal

import cats.syntax.all.*
import doobie.*
import weir.InvalidSettings
import weir.postgres.{Enqueued, Schema, TaskQueue}

/**
 * Enqueues tasks that wait for others, in the caller's transaction (see [[weir.postgres.TaskGraph]]):
 *
 *   1. the existing parents are locked and marked ([[GraphSql.holdParents]]): none can end before the
 *      edges commit; those that already ended are found in `finished`; any other id fails the enqueue;
 *   2. ids are drawn for every task in an order where each comes after those it waits for, so that a
 *      parent's id is smaller than its dependents' (an ordering key's order is id order: a dependent never
 *      stands before its parent in its key's line);
 *   3. the tasks are inserted, `waiting` with their parents' count, or `available`. A task with a unique key
 *      that others of the graph wait for goes in alone, first, so that a held key's holder is known before
 *      its dependents name it (they then wait for the holder, locked as an existing parent); the others go
 *      in by statements of [[TaskQueue.statementSize]];
 *   4. the edges are inserted, and the parents that had already ended are settled as their end would have
 *      (released, or cancelled: the schema's `parents_ended`); the queues of available tasks are woken.
 *
 * A task with one parent and no ordering key names that parent in `waits_on`: the parent's completion makes
 * it claimable from `waiting` without a write of its own (migration 18, ADR 0059), and finds it through the
 * index on `waits_on`, so it has no edge unless it runs on any outcome of its parent, which its edge says
 * (migration 19, ADR 0060).
 *
 * With a `batch`, every task inserted is a member of it (its `batch` column; [[BatchEnqueue]] checks the
 * batch and counts them).
 *
 * The workflow of each task (migration 14): with `oneWorkflow` (a [[weir.postgres.TaskGraph]]), the whole
 * graph's, which is the oldest workflow of its existing parents, or the id drawn for its first task when it
 * names none; otherwise (tasks enqueued together that wait for none of each other) each task's own: the
 * oldest workflow of its parents, none for a task without parents. A parent in no workflow stands for the
 * workflow named by its id.
 *
 * Errors: the graph's own ([[Graphs.errors]]) and unknown parents, as one [[weir.InvalidSettings]] named
 * `settings`, each naming its task; checked before anything is written, but for unknown parents, found by
 * the first statement (which then changed only marks, undone with the caller's transaction).
 */
private[postgres] object GraphEnqueue:

  def apply(
      schema: Schema,
      nodes: Vector[Graphs.Node],
      settings: String,
      oneWorkflow: Boolean,
      batch: Option[Long] = None
  ): ConnectionIO[Vector[Enqueued]] =
    Graphs.errors(nodes, schema) match
      case Nil if nodes.isEmpty => FC.pure(Vector.empty)
      case Nil =>
        Graphs.order(nodes).fold(
          _ => FC.raiseError(defect),
          order => run(schema, nodes, order, settings, oneWorkflow, batch)
        )
      case errors => FC.raiseError(new InvalidSettings(settings, errors))

  private def defect = new IllegalStateException("a graph without errors has a cycle")

  private def run(
      schema: Schema,
      nodes: Vector[Graphs.Node],
      order: Vector[Int],
      settings: String,
      oneWorkflow: Boolean,
      batch: Option[Long]
  ): ConnectionIO[Vector[Enqueued]] =
    val sql = new GraphSql(schema)
    val index = nodes.iterator.map(_.handle).zipWithIndex.toMap
    val hasChildren = nodes.flatMap(_.after.map(a => index(a.parent))).toSet
    // the graph's tasks that a task of it waits for through `waits_on`: its one parent, named by handle (a
    // parent that stands for a held unique key's holder is marked below, with the existing parents)
    val waitedOn = nodes.flatMap(n =>
      Option.when(n.parents.isEmpty && n.after.size == 1 && lone(n))(index(n.after.head.parent))
    ).toSet
    val external = nodes.flatMap(_.parents.map(_.parent)).distinct
    for
      liveRoots <-
        if external.isEmpty then FC.pure(Vector.empty[(Long, Long)]) else sql.holdParents(external.toArray)
      live = liveRoots.map(_._1)
      rest = external.filterNot(live.toSet)
      endedRoots <-
        if rest.isEmpty then FC.pure(Vector.empty[(Long, Long)]) else sql.endedAmong(rest.toArray)
      ended = endedRoots.map(_._1)
      roots = (liveRoots ++ endedRoots).toMap
      unknown = rest.toSet -- ended
      _ <-
        if unknown.isEmpty then FC.unit
        else FC.raiseError[Unit](new InvalidSettings(settings, unknownErrors(schema, nodes, unknown)))
      drawn <- sql.drawIds(nodes.size)
      ids = Array.fill(nodes.size)(0L)
      _ = order.lazyZip(drawn).foreach((i, id) => ids(i) = id)
      firsts = firstOfKey(nodes, order)
      graphWorkflow = roots.values.minOption.getOrElse(drawn.head)
      workflowOf = (i: Int) =>
        if oneWorkflow then Some(graphWorkflow) else nodes(i).parents.map(p => roots(p.parent)).minOption
      results = new Array[Enqueued | Null](nodes.size)
      // each row with its parents' final ids: those of the graph are known once its earlier rows are in
      row = (i: Int) =>
        val parents = parentsOf(nodes(i), ids, index)
        GraphSql.Row(
          ids(i),
          nodes(i).queue,
          nodes(i).task,
          firsts(i),
          parents.map(_._1),
          parents.size,
          hasChildren(i),
          workflowOf(i),
          Option.when(fromWaiting(nodes(i), parents))(parents.head._1),
          waitedOn(i)
        )
      alone = order.filter(i => nodes(i).task.uniqueKey.isDefined && hasChildren(i))
      _ <- alone.traverse_ { i =>
        settle(sql, Vector(row(i)), batch).map { r =>
          results(i) = r.head
          ids(i) = r.head.taskId
        }
      }
      together = order.filterNot(alone.toSet)
      _ <- together.grouped(TaskQueue.statementSize).toVector.traverse_ { group =>
        settle(sql, group.map(row), batch).map(rs => group.lazyZip(rs).foreach((i, r) => results(i) = r))
      }
      done = results.toVector.map(_.nn)
      inserted = done.collect { case Enqueued.Inserted(id) => id }.toSet
      // a held key's holder outside the graph is one more existing parent of the tasks that name its task
      holders = alone.collect { case i if !inserted(ids(i)) => ids(i) }.distinct
      heldLive <-
        if holders.isEmpty then FC.pure(Vector.empty[Long])
        else sql.holdParents(holders.toArray).map(_.map(_._1))
      // each inserted task's parents by final id (a held key's task stands for its holder from here on)
      finalParents = nodes.indices.collect {
        case i if inserted(ids(i)) => i -> parentsOf(nodes(i), ids, index)
      }
      // a dependent claimed from `waiting` that needs its parent completed has no edge: its parent's end
      // finds it through `tasks_waits_on` (migration 19), once marked; one that runs on any outcome keeps
      // its edge
      waitedExisting = finalParents.flatMap { (i, parents) =>
        Option.when(fromWaiting(nodes(i), parents) && !parents.head._2)(parents.head._1)
      }.filterNot(inserted).distinct
      liveExisting = (live ++ heldLive).toSet
      marks = waitedExisting.filter(liveExisting)
      _ <- if marks.isEmpty then FC.unit else sql.markWaitedOn(marks.toArray).void
      edges = finalParents.flatMap { (i, parents) =>
        if fromWaiting(nodes(i), parents) then
          parents.collect { case (p, true) => (p, ids(i), true, Some(nodes(i).queue)) }
        else parents.map((p, any) => (p, ids(i), any, None))
      }
      _ <-
        if edges.isEmpty then FC.unit
        else
          sql.insertEdges(
            edges.map(_._1).toArray,
            edges.map(_._2).toArray,
            edges.map(e => if e._3 then 1 else 0).toArray,
            edges.map(_._4).toArray
          ).void
      settled = ended ++ holders.filterNot(heldLive.toSet)
      _ <- if settled.isEmpty then FC.unit else sql.parentsEnded(settled.toArray).void
      ready = finalParents.collect { case (i, parents) if parents.isEmpty => nodes(i).queue }.distinct
      _ <- if ready.isEmpty then FC.unit else sql.wakeQueues(ready.toArray).void
    yield done

  /**
   * The parents of `node` by final id, each once, in the order it names them (its existing parents, then
   * those of its graph), with whether it runs on any of their ends: a parent named twice (a task of the
   * graph that stands for an existing one) is awaited as strictly as either entry asks.
   */
  private def parentsOf(
      node: Graphs.Node,
      ids: Array[Long],
      index: Map[String, Int]
  ): Vector[(Long, Boolean)] =
    // linear in the parents: a fan-in's last task names every task of its graph
    val strictness = scala.collection.mutable.LinkedHashMap.empty[Long, Boolean]
    val all = node.parents.iterator.map(p => (p.parent, p.anyOutcome)) ++
      node.after.iterator.map(a => (ids(index(a.parent)), a.anyOutcome))
    all.foreach((id, any) => strictness.updateWith(id)(seen => Some(seen.fold(any)(_ && any))))
    strictness.toVector

  /**
   * Whether `node` is claimed straight from `waiting` once its one parent completed (migration 18): one
   * parent, no ordering key (a keyed task waits its key's turn through its row's `head` mark, which a
   * release sets).
   */
  private def fromWaiting(node: Graphs.Node, parents: Vector[(Long, Boolean)]): Boolean =
    parents.size == 1 && node.task.orderingKey.isEmpty

  /** Whether `node`, whose one parent its `after` names, waits without an edge: no key, that parent completed. */
  private def lone(node: Graphs.Node): Boolean =
    node.task.orderingKey.isEmpty && !node.after.head.anyOutcome

  /**
   * Whether each node may be its key's head: no task before it in `order`, without a unique key (which may
   * be refused), has its queue and key (see [[EnqueueSql]]); the insert also checks the table.
   */
  private def firstOfKey(nodes: Vector[Graphs.Node], order: Vector[Int]): Array[Boolean] =
    val sure = scala.collection.mutable.HashSet.empty[(String, String)]
    val firsts = Array.fill(nodes.size)(true)
    order.foreach { i =>
      nodes(i).task.orderingKey.foreach { key =>
        firsts(i) = !sure.contains((nodes(i).queue, key))
        if nodes(i).task.uniqueKey.isEmpty then sure += ((nodes(i).queue, key))
      }
    }
    firsts

  // settled in rounds, as a queue's enqueue is ([[Settling]])
  private def settle(
      sql: GraphSql,
      rows: Vector[GraphSql.Row],
      batch: Option[Long]
  ): ConnectionIO[Vector[Enqueued]] =
    Settling.rounds(rows)(sql.insert(_, batch))

  private def unknownErrors(schema: Schema, nodes: Vector[Graphs.Node], unknown: Set[Long]): List[String] =
    nodes.toList.flatMap { n =>
      val missing = n.parents.map(_.parent).filter(unknown)
      Option.when(missing.nonEmpty)(
        s"${n.label} waits for unknown task${
            if missing.size > 1 then "s" else ""
          } ${missing.mkString(", ")}: " +
          s"no task of schema '$schema' has ${
              if missing.size > 1 then "these ids" else "this id"
            }, or its row " +
          "is gone (completed without keepCompleted, or pruned)"
      )
    }
