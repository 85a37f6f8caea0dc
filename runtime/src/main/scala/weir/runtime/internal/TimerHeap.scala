package weir.runtime.internal

import weir.runtime.internal.TimerScheduler.Timer

/**
 * The timer thread's pending timers, earliest deadline first: a binary min-heap over two parallel arrays,
 * the deadlines apart from the timers so that sifting reads packed longs. Owned by one thread; not safe
 * to share.
 */
private[internal] final class TimerHeap:
  private var deadlines = new Array[Long](64)
  private var timers = new Array[Timer](64)
  private var count = 0

  def size: Int = count

  /** The earliest deadline; the heap must not be empty. */
  def firstDeadline: Long = deadlines(0)

  def add(timer: Timer): Unit =
    if count == deadlines.length then
      deadlines = java.util.Arrays.copyOf(deadlines, count * 2)
      timers = java.util.Arrays.copyOf(timers, count * 2)
    siftUp(count, timer.deadline, timer)
    count += 1

  /** Removes and returns the timer with the earliest deadline; the heap must not be empty. */
  def removeFirst(): Timer =
    val first = timers(0)
    count -= 1
    val lastDeadline = deadlines(count)
    val last = timers(count)
    timers(count) = null
    if count > 0 then siftDown(0, lastDeadline, last)
    first

  /** Drops the timers whose callback was cancelled, keeping the others in heap order. */
  def removeCancelled(): Unit =
    var kept = 0
    var i = 0
    while i < count do
      if timers(i).task != null then
        move(i, kept)
        kept += 1
      i += 1
    java.util.Arrays.fill(timers.asInstanceOf[Array[AnyRef]], kept, count, null)
    count = kept
    var parent = (count >>> 1) - 1
    while parent >= 0 do
      siftDown(parent, deadlines(parent), timers(parent))
      parent -= 1

  private def siftUp(from: Int, deadline: Long, timer: Timer): Unit =
    var i = from
    var continue = true
    while continue && i > 0 do
      val parent = (i - 1) >>> 1
      if deadlines(parent) <= deadline then continue = false
      else
        move(parent, i)
        i = parent
    deadlines(i) = deadline
    timers(i) = timer

  private def siftDown(from: Int, deadline: Long, timer: Timer): Unit =
    var i = from
    val half = count >>> 1
    var continue = true
    while continue && i < half do
      var child = 2 * i + 1
      val right = child + 1
      if right < count && deadlines(right) < deadlines(child) then child = right
      if deadline <= deadlines(child) then continue = false
      else
        move(child, i)
        i = child
    deadlines(i) = deadline
    timers(i) = timer

  private def move(from: Int, to: Int): Unit =
    deadlines(to) = deadlines(from)
    timers(to) = timers(from)
