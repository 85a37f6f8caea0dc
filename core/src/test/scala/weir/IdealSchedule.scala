package weir

import scala.collection.mutable

/**
 * The zero-overhead schedule: tasks become available at `available(i)` (in this order), `slots` run at
 * once, and each task starts first-come first-served as soon as it is available and a slot is free.
 * Returns the makespan (the time the last task ends), in the same unit as the inputs.
 */
object IdealSchedule:
  def makespan(available: Seq[Long], durations: Seq[Long], slots: Int): Long =
    require(available.size == durations.size, "one availability time per task")
    val free = mutable.PriorityQueue.empty[Long](using scala.math.Ordering.Long.reverse)
    var end = 0L
    available.indices.foreach { i =>
      val start = if free.size < slots then available(i) else math.max(available(i), free.dequeue())
      val done = start + durations(i)
      free.enqueue(done)
      end = math.max(end, done)
    }
    end
