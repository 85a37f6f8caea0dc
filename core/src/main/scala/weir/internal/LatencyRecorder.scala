package weir.internal

import weir.Latency

import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.atomic.AtomicInteger

/**
 * The task latencies of one run: recorded from any thread, summarised once, when recording is over.
 *
 * The first [[OwnHistograms]] threads that record each write to a [[LogHistogram]] of their own, so a
 * record is a thread-local lookup and a plain single-writer histogram write: no atomic instruction, no
 * cache line written by two threads (ADR 0012, addendum 2). [[summary]] merges the histograms into one and
 * reads the percentiles from the merge.
 *
 * With asynchronous handlers the recording threads are the runtime's compute threads, a few. After a
 * blocking handler, though, the worker goes on on the thread that blocked, so a run at concurrency 1000 can
 * record from hundreds of threads, and a histogram each would make the recorder's memory grow with the
 * concurrency. Threads beyond the first [[OwnHistograms]] therefore share one histogram under a lock: at
 * most `OwnHistograms + 1` histograms, whatever the concurrency, for one lock per record next to a handler
 * that blocked a thread.
 *
 * ==Reading==
 * A histogram is read without synchronisation, so [[summary]] must happen after every [[record]] it is to
 * count (the engine reads once every worker has left the pool, which orders each worker's records before
 * the read). The summary also lets the threads' histograms go: a thread keeps only a small empty slot of a
 * finished run in its thread-local map until that map drops it, not the histogram. Recording after a
 * summary starts again from nothing. [[histogram]], the live read for metrics, keeps what the summaries
 * let go (one merged histogram), so it counts everything ever recorded.
 */
private[weir] final class LatencyRecorder:
  import LatencyRecorder.*

  private val slots = new ConcurrentLinkedQueue[OwnSlot]
  private val own = new AtomicInteger(0) // threads given a slot of their own so far
  private val sharedSlot = new SharedSlot

  private val slot: ThreadLocal[Slot] = ThreadLocal.withInitial { () =>
    if own.get() >= OwnHistograms || own.getAndIncrement() >= OwnHistograms then sharedSlot
    else
      val slot = new OwnSlot
      slots.add(slot)
      slot
  }

  /** Records one latency in nanoseconds (a negative one, from a clock that went back, as zero). */
  def record(nanos: Long): Unit = slot.get().record(math.max(0L, nanos))

  private var summarised = new LogHistogram // every summary's values, for `histogram`; guarded by `this`

  /**
   * Count, mean, percentiles and maximum of everything recorded since the last summary (see "Reading").
   *
   * The histograms the threads let go are no longer written, so the others are added into one of them, and
   * the first summary's is kept as the sum of the summaries rather than copied: a summary allocates no
   * histogram, and one of a single thread's records (a short run) adds none.
   */
  def summary: Latency = synchronized {
    var drained = List.empty[LogHistogram]
    slots.forEach(slot => drained = slot.drain(drained))
    drained = sharedSlot.drain(drained)
    drained match
      case Nil => Latency.empty
      case merged :: more =>
        more.foreach(merged.add)
        if summarised.count == 0 then summarised = merged else summarised.add(merged)
        merged.latency
  }

  /**
   * Everything recorded so far, summaries or not, as a new histogram; read while threads record, so a
   * record in progress may show in part (its count and not yet its sum) or not at all, and once recording
   * is over (see "Reading") the read is exact.
   */
  def histogram: LogHistogram = synchronized {
    val copy = new LogHistogram
    copy.add(summarised)
    slots.forEach(_.copyInto(copy))
    sharedSlot.copyInto(copy)
    copy
  }

  /** How many histograms hold values now (for tests: at most `OwnHistograms + 1`). */
  private[internal] def histograms: Int =
    var n = if sharedSlot.holdsValues then 1 else 0
    slots.forEach(s => if s.holdsValues then n += 1)
    n

private[weir] object LatencyRecorder:

  /** Where one thread's records go; a histogram is created on the first record and let go by a summary. */
  private sealed trait Slot:
    def record(nanos: Long): Unit
    def holdsValues: Boolean

    /** The histogram of the values recorded so far, if any, prepended to `to`; the slot lets it go. */
    def drain(to: List[LogHistogram]): List[LogHistogram]

    /** Adds the values recorded so far to `into`, keeping them. */
    def copyInto(into: LogHistogram): Unit

  /**
   * A histogram of one thread's own: a single writer, no synchronisation. An empty histogram holds no
   * counts ([[LogHistogram]] allocates a group on its first value): a drain swaps in a new one only when
   * the slot holds values.
   */
  private final class OwnSlot extends Slot:
    private var histogram = new LogHistogram

    def record(nanos: Long): Unit = histogram.record(nanos)

    def holdsValues: Boolean = histogram.count > 0

    def drain(to: List[LogHistogram]): List[LogHistogram] =
      val h = histogram
      if h.count == 0 then to
      else
        histogram = new LogHistogram
        h :: to

    def copyInto(into: LogHistogram): Unit = into.add(histogram)

  /**
   * The histogram the threads beyond the first [[OwnHistograms]] share: every access holds this slot's
   * lock, so concurrent writers and the summary's drain see one histogram at a time.
   */
  private final class SharedSlot extends Slot:
    private val own = new OwnSlot

    def record(nanos: Long): Unit = synchronized(own.record(nanos))
    def holdsValues: Boolean = synchronized(own.holdsValues)
    def drain(to: List[LogHistogram]): List[LogHistogram] = synchronized(own.drain(to))
    def copyInto(into: LogHistogram): Unit = synchronized(own.copyInto(into))

  /**
   * Threads that get a histogram of their own: enough for the compute threads of any runtime this machine
   * runs (Cats Effect starts one per core) and a few more.
   */
  val OwnHistograms: Int = 2 * Runtime.getRuntime.availableProcessors + 4
