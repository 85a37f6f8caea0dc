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
 * the read). Recording after a summary is allowed; it counts in the next one.
 */
private[weir] final class LatencyRecorder:
  private val histograms = new ConcurrentLinkedQueue[Histogram]
  private val own: ThreadLocal[Histogram] = ThreadLocal.withInitial { () =>
    val h = new Histogram(LatencyRecorder.SignificantDigits)
    histograms.add(h)
    h
  }

  /** Records one latency in nanoseconds (a negative one, from a clock that went back, as zero). */
  def record(nanos: Long): Unit = own.get().recordValue(math.max(0L, nanos))

  /** Count, mean, percentiles and maximum of everything recorded so far (see "Reading"). */
  def summary: Latency =
    val merged = new Histogram(LatencyRecorder.SignificantDigits)
    histograms.forEach(h => merged.add(h))
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
  /** Values are kept to within 0.1% (HdrHistogram's precision for 3 significant digits). */
  final val SignificantDigits = 3
