package weir.lab.requests

/**
 * What a zero-overhead client could do with the same requests.
 *
 * The ideal schedule: every request is ready at time 0; they start in id order, each at the first instant
 * one of `concurrency` slots is free (first come, first served), and hold the slot for exactly the
 * server's delay of that id (no network, no client or server cost). Its makespan is when the last one
 * ends. Little's law bounds the steady-state rate of any client keeping `concurrency` requests in flight
 * by `concurrency / mean delay`; a finite run stays below it (the slots fill at once but empty one by
 * one at the end).
 */
object RequestIdeal:

  /** The ideal makespan and the mean delay, both in ms, for `delay(0) … delay(n - 1)`. */
  final case class Figures(makespanMs: Long, meanDelayMs: Double, concurrency: Int):
    /** Little's-law bound in requests per second; infinite when every delay is zero. */
    def littleBoundPerSecond: Double =
      if meanDelayMs <= 0 then Double.PositiveInfinity else concurrency * 1000.0 / meanDelayMs

  /**
   * Simulates the schedule with one heap of `concurrency` end times: O(n log concurrency) time, O(concurrency)
   * memory (delays are computed on the fly, never stored), so it runs for ten million requests.
   */
  def of(n: Long, concurrency: Int, delay: Long => Long): Figures =
    require(n >= 0, s"number of requests must be >= 0, was: $n")
    require(concurrency > 0, s"concurrency must be > 0, was: $concurrency")
    val ends = new LongMinHeap(math.min(concurrency.toLong, math.max(n, 1L)).toInt)
    var makespan = 0L
    var total = 0.0
    var i = 0L
    while i < n do
      val d = delay(i)
      require(d >= 0, s"delay of request $i must be >= 0 ms, was: $d")
      total += d
      val start = if ends.size < concurrency then 0L else ends.pop()
      val end = start + d
      ends.push(end)
      if end > makespan then makespan = end
      i += 1
    Figures(makespan, if n == 0 then 0.0 else total / n, concurrency)

  /** The figures for the delay server's requests `0 until n`. */
  def ofServer(n: Long, concurrency: Int, seed: Long, maxDelayMs: Long): Figures =
    of(n, concurrency, id => DelayServer.delayMs(seed, id, maxDelayMs))

  /** A binary min-heap of longs (no boxing). */
  private final class LongMinHeap(capacity: Int):
    private var a = new Array[Long](math.max(capacity, 1))
    var size = 0

    def push(x: Long): Unit =
      if size == a.length then a = java.util.Arrays.copyOf(a, a.length * 2)
      var i = size
      a(i) = x
      size += 1
      while i > 0 && a((i - 1) / 2) > a(i) do
        val p = (i - 1) / 2
        val t = a(p); a(p) = a(i); a(i) = t
        i = p

    def pop(): Long =
      val top = a(0)
      size -= 1
      a(0) = a(size)
      var i = 0
      var done = false
      while !done do
        val l = 2 * i + 1
        val r = l + 1
        var m = i
        if l < size && a(l) < a(m) then m = l
        if r < size && a(r) < a(m) then m = r
        if m == i then done = true
        else
          val t = a(m); a(m) = a(i); a(i) = t
          i = m
      top
