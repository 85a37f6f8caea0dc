package weir.internal

import org.HdrHistogram.Histogram
import weir.Latency

import java.util.concurrent.ConcurrentLinkedQueue
import scala.concurrent.duration.*

/**
 * The task latencies of one run: recorded from any thread, summarised once, when recording is over.
 *
 * Every thread that records writes to a histogram of its own (HdrHistogram, 3 significant digits, resized
 * as needed), so a record is a thread-local lookup and a plain single-writer histogram write: no atomic
 * instruction, no cache line written by two threads. (One shared `ConcurrentHistogram` costs four contended
 * atomic updates per record, and reading its percentiles takes a lock per bucket: about 1.5 ms for a run of
 * 1 ms tasks, as much as the run's slack; see ADR 0012, addendum 2.) [[summary]] merges the threads'
 * histograms into one and reads the percentiles from the merge.
 *
 * ==Reading==
 * A histogram is read without synchronisation, so [[summary]] must happen after every [[record]] it is to
 * count (the engine reads once every worker has left the pool, which orders each worker's records before
 * the read). The summary also lets the threads' histograms go: a thread keeps only a small empty slot of a
 * finished run in its thread-local map until that map drops it, not the histogram. Recording after a
 * summary starts again from nothing.
 */
private[weir] final class LatencyRecorder:
  import LatencyRecorder.*

  private val slots = new ConcurrentLinkedQueue[Slot]
  private val own: ThreadLocal[Slot] = ThreadLocal.withInitial { () =>
    val slot = new Slot
    slots.add(slot)
    slot
  }

  /** Records one latency in nanoseconds (a negative one, from a clock that went back, as zero). */
  def record(nanos: Long): Unit =
    val slot = own.get()
    var h = slot.histogram
    if h == null then
      h = new Histogram(SignificantDigits)
      slot.histogram = h
    h.recordValue(math.max(0L, nanos))

  /** Count, mean, percentiles and maximum of everything recorded since the last summary (see "Reading"). */
  def summary: Latency =
    val merged = new Histogram(SignificantDigits)
    slots.forEach { slot =>
      val h = slot.histogram
      if h != null then
        merged.add(h)
        slot.histogram = null
    }
    if merged.getTotalCount == 0 then Latency.empty
    else
      def at(percentile: Double) = merged.getValueAtPercentile(percentile).nanos
      Latency(
        merged.getTotalCount,
        merged.getMean.toLong.nanos,
        at(50),
        at(90),
        at(99),
        at(99.9),
        merged.getMaxValue.nanos
      )

private[weir] object LatencyRecorder:
  /** A recording thread's histogram, created on its first record and released by a summary. */
  private final class Slot:
    var histogram: Histogram = null

  /** Values are kept to within 0.1% (HdrHistogram's precision for 3 significant digits). */
  final val SignificantDigits = 3
