package weir.lab.compare.scenarios

import scala.collection.mutable

/**
 * The zero-overhead schedule a run is measured against.
 *
 * Model: tasks become available when their producer has waited out its batches' produce delays (producers
 * never wait for consumers: the buffer is unbounded and handing over costs nothing); `slots` tasks run at
 * once; a task starts first-come first-served (ties: lower producer, then lower task id) at the first
 * instant it is available and a slot is free, and holds the slot for exactly its consume delay. The
 * makespan is when the last task ends. (The same model as weir-core's test `IdealSchedule`.)
 */
object Ideal:

  /** Start and end of every task (indexed by task id) and the makespan, in ms. */
  final case class Schedule(makespan: Long, start: Vector[Long], end: Vector[Long])

  def makespan(available: Seq[Long], durations: Seq[Long], slots: Int): Long =
    simulate(available, durations, slots)._2

  /** Ends in the given order and the makespan; `available` must be in the order tasks are served. */
  def simulate(available: Seq[Long], durations: Seq[Long], slots: Int): (Vector[(Long, Long)], Long) =
    require(
      available.size == durations.size,
      s"one availability time per task: ${available.size} vs ${durations.size}"
    )
    require(slots > 0, s"slots must be > 0, was: $slots")
    val free = mutable.PriorityQueue.empty[Long](using scala.math.Ordering.Long.reverse)
    var end = 0L
    val spans = Vector.newBuilder[(Long, Long)]
    available.indices.foreach { i =>
      val start = if free.size < slots then available(i) else math.max(available(i), free.dequeue())
      val done = start + durations(i)
      free.enqueue(done)
      spans += ((start, done))
      end = math.max(end, done)
    }
    (spans.result(), end)

  /**
   * The makespan of [[of]]'s model with the tasks started in `order` (task ids, every task once) instead of
   * first come, first served: each in turn takes the slot that frees first, once it is available.
   *
   * It is a lower bound of any run that starts its tasks in that order with at most `slots` at once, no
   * task before its ideal availability and none shorter than its delay: by induction on the order, the
   * `k`-th task's start here is at most the later of its availability and the `(k - slots)`-th earliest end
   * among the tasks before it, and the run's start is at least that (a run has a free slot only once that
   * many of them have ended). [[of]] is no such bound: a run that serves tasks in another order than first
   * come, first served can pack them better and end sooner.
   */
  def inOrder(plan: Plan, producers: Int, order: Vector[Int]): Long =
    require(
      order.sorted == order.indices.toVector && order.size == plan.workload.tasks,
      s"order must hold each of the ${plan.workload.tasks} tasks once, was: ${order.take(20)}"
    )
    val at = Array.fill(plan.workload.tasks)(0L)
    plan.arrivals(producers).foreach(a => at(a.task) = a.at)
    simulate(order.map(at(_)), order.map(plan.consumeMs), plan.workload.slots)._2

  /** The ideal schedule of `plan` with `producers` producers and the workload's slots. */
  def of(plan: Plan, producers: Int): Schedule =
    val arrivals = plan.arrivals(producers)
    val (spans, makespan) =
      simulate(arrivals.map(_.at), arrivals.map(a => plan.consumeMs(a.task)), plan.workload.slots)
    val start = Array.fill(plan.workload.tasks)(0L)
    val end = Array.fill(plan.workload.tasks)(0L)
    arrivals.zip(spans).foreach { (a, s) => start(a.task) = s._1; end(a.task) = s._2 }
    Schedule(makespan, start.toVector, end.toVector)
