package weir.postgres.internal

import weir.Validation
import weir.postgres.{After, Schema}

import scala.collection.mutable

/**
 * The checks and the order of a graph of tasks to enqueue together ([[weir.postgres.TaskGraph]], and the
 * batches of [[weir.postgres.TaskQueue]] whose tasks wait for others): pure, so that they are checked
 * before anything is sent.
 */
private[postgres] object Graphs:

  /**
   * A task to enqueue: `label`, how errors name it ("task 'fetch'", "task 3"); `handle`, its name in its
   * graph; its queue and the schema of that queue's database; the task, encoded, with what is wrong with
   * it (`errors`, its queue's name included); the existing tasks it waits for (`parents`, by id) and the
   * tasks of its graph it waits for (`after`, by handle).
   */
  final case class Node(
      label: String,
      handle: String,
      queue: String,
      schema: Schema,
      task: Sql.EncodedTask,
      errors: List[String],
      parents: Vector[After[Long]],
      after: Vector[After[String]]
  )

  /**
   * What is wrong with `nodes` as one graph enqueued into `schema`, each error naming its task: the tasks'
   * own errors, handles that are empty or name two tasks, `after` entries that name no task of the graph
   * or one task twice, a task of another schema, and a cycle (naming its tasks in order).
   */
  def errors(nodes: Vector[Node], schema: Schema): List[String] =
    val handles = nodes.groupBy(_.handle)
    val own = nodes.toList.flatMap { n =>
      Validation.nested(n.label, n.errors) ++
        Validation.check(
          n.handle != null && n.handle.nonEmpty,
          s"${n.label}: its handle must not be empty"
        ) ++
        Validation.check(
          n.schema == schema,
          s"${n.label} is of queue '${n.queue}' of schema '${n.schema}', not of schema '$schema' that the " +
            "graph is enqueued into: a graph's tasks, and the tasks they wait for, are of one schema"
        ) ++
        n.after.filterNot(a => handles.contains(a.parent)).map(a =>
          s"${n.label} waits for '${a.parent}', which names no task of the graph"
        ) ++
        After.twice(n.after).map(h => s"${n.label} names '$h' more than once in its after")
    }
    val repeated = handles.collect {
      case (h, ns) if ns.size > 1 && h != null && h.nonEmpty =>
        s"handle '$h' names ${ns.size} tasks (${ns.map(_.label).mkString(", ")}): a handle names one task"
    }.toList.sorted
    val cycle =
      if own.nonEmpty || repeated.nonEmpty then Nil
      else
        order(nodes).left.toOption.toList.map(c =>
          s"tasks ${(c :+ c.head).map(i => s"'${nodes(i).handle}'").mkString(" → ")} wait for each other: a " +
            "graph has no cycle"
        )
    own ++ repeated ++ cycle

  /**
   * The indexes of `nodes` (whose handles are distinct and whose `after` names only them) in an order
   * where every task comes after those it waits for, and otherwise in their given order; or a cycle, the
   * indexes of its tasks, each waiting for the next (the last for the first).
   */
  def order(nodes: Vector[Node]): Either[Vector[Int], Vector[Int]] =
    val index = nodes.iterator.map(_.handle).zipWithIndex.toMap
    val parents = nodes.map(_.after.map(a => index(a.parent)).distinct)
    val children = Array.fill(nodes.size)(Vector.newBuilder[Int])
    parents.iterator.zipWithIndex.foreach((ps, i) => ps.foreach(p => children(p) += i))
    val kids = children.map(_.result())
    val waiting = parents.map(_.size).toArray
    val ready = mutable.PriorityQueue.empty[Int](using Ordering.Int.reverse)
    waiting.indices.foreach(i => if waiting(i) == 0 then ready.enqueue(i))
    val out = Vector.newBuilder[Int]
    var placed = 0
    while ready.nonEmpty do
      val i = ready.dequeue()
      out += i
      placed += 1
      kids(i).foreach { k =>
        waiting(k) -= 1
        if waiting(k) == 0 then ready.enqueue(k)
      }
    if placed == nodes.size then Right(out.result())
    else Left(cycleAmong(waiting.indices.filter(waiting(_) > 0).toSet, parents))

  /**
   * A cycle among `left`, the tasks Kahn's walk could not place (each waits, directly or not, for a task of
   * a cycle): from any of them, follow a parent that is left until a task comes back.
   */
  private def cycleAmong(left: Set[Int], parents: Vector[Vector[Int]]): Vector[Int] =
    val path = mutable.ArrayBuffer.empty[Int]
    val at = mutable.HashMap.empty[Int, Int]
    var i = left.min
    while !at.contains(i) do
      at(i) = path.size
      path += i
      i = parents(i).filter(left).min
    // the walk went from each task to one it waits for
    path.drop(at(i)).toVector
