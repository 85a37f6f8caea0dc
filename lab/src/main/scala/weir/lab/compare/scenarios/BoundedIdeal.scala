package weir.lab.compare.scenarios

import scala.collection.mutable

/**
 * The ideal schedule with the workload's bounded buffer: [[Ideal]]'s model (no overhead; `slots` tasks at
 * once, first come, first served), except that the tasks a producer has produced wait in a buffer of
 * `buffer` places until they start, a producer whose batch finds the buffer full waits for room, and its
 * next batch's produce delay begins only once the whole batch is in. Producers waiting for room are let in
 * in the order their batches became due (then the lower producer first), as [[Ideal]] orders arrivals.
 *
 * It is the yardstick for bursts larger than the buffer, where [[Ideal]]'s producers, which never wait, are
 * out of reach of any bounded buffer: a producer's pause starts later when its burst had to wait. With a
 * buffer that holds every task the two schedules are the same.
 */
object BoundedIdeal:

  def makespan(plan: Plan, producers: Int, buffer: Int): Long =
    require(buffer > 0, s"buffer must be > 0, was: $buffer")
    val w = plan.workload
    val ps = (0 until producers).map(p => new Producer(p, w.batchesOf(p, producers).toVector, plan)).toVector
    val queue = mutable.Queue.empty[Int] // placed, not started: the buffer
    val running = mutable.PriorityQueue.empty[Long](using scala.math.Ordering.Long.reverse) // their ends
    var now = 0L
    var end = 0L
    var go = true
    while go do
      while running.nonEmpty && running.head <= now do running.dequeue(): Unit
      var moved = true
      while moved do
        moved = false
        while running.size < w.slots && queue.nonEmpty do
          val e = now + plan.consumeMs(queue.dequeue())
          running.enqueue(e)
          end = math.max(end, e)
          moved = true
        // one producer at a time, the earliest due first: one whose next batch falls due right now is
        // ordered against the others again
        var room = queue.size < buffer
        while room do
          ps.filter(_.due(now)).minByOption(p => (p.ready, p.id)) match
            case None => room = false
            case Some(p) =>
              while p.pending.nonEmpty && queue.size < buffer do queue.enqueue(p.place())
              if p.pending.isEmpty then p.next(now)
              moved = true
              room = queue.size < buffer
      val nextEnd = if running.nonEmpty then running.head else Long.MaxValue
      val nextDue =
        ps.filter(p => p.pending.nonEmpty && p.ready > now).map(_.ready).minOption.getOrElse(Long.MaxValue)
      val next = math.min(nextEnd, nextDue)
      if next == Long.MaxValue then go = false else now = next
    end

  /** One producer: its batches, the one it is producing, and what of it is not yet in the buffer. */
  private final class Producer(val id: Int, batches: Vector[Int], plan: Plan):
    private var k = 0
    var ready: Long = batches.headOption.fold(Long.MaxValue)(plan.produceMs(_))
    var pending: List[Int] = batches.headOption.fold(List.empty[Int])(b => plan.workload.idsOf(b).toList)

    def due(now: Long): Boolean = pending.nonEmpty && ready <= now

    def place(): Int =
      val task = pending.head
      pending = pending.tail
      task

    /** The whole batch is in at `now`: the next one's produce delay begins. */
    def next(now: Long): Unit =
      k += 1
      if k < batches.size then
        ready = now + plan.produceMs(batches(k))
        pending = plan.workload.idsOf(batches(k)).toList
