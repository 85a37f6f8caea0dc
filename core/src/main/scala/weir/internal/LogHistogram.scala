package weir.internal

import weir.Latency

import scala.concurrent.duration.*

/**
 * A histogram of non-negative `Long` values (latencies in nanoseconds) with a relative precision of
 * 2^-[[LogHistogram.SubBits]] (under 0.1%): log-bucketed, with linear sub-buckets in each power of two, after
 * the layout of Gil Tene's HdrHistogram.
 *
 * Every group has `Sub` buckets. Group 0 counts the values below `Sub` exactly, group 1 those from `Sub` to
 * `2 * Sub - 1`, also exactly; a larger value `v`, with its highest bit at `e`, falls in group `e - SubBits + 1`,
 * sub-bucket `(v >>> (e - SubBits)) - Sub`. So each group from 1 on covers one power of two with buckets of equal width,
 * and a bucket is never wider than `1 / Sub` of the values it holds. A group's counts (8 KiB) are allocated on
 * its first value, so a histogram of latencies that span a few powers of two holds a few groups, and one of
 * values under a microsecond holds one.
 *
 * Count, sum, minimum and maximum are kept exactly, and the reads ([[add]], [[latency]], [[countsUpTo]])
 * walk only the buckets from the minimum's to the maximum's: latencies that cluster, as a run's usually do,
 * are read in a few dozen steps rather than a thousand per group. Percentiles are nearest-rank, reported as
 * the highest value of the bucket that holds the rank (capped by the maximum), so a reported percentile is
 * never below the exact one and exceeds it by less than 2^-`SubBits` of it. The sum is a `Long`: it overflows
 * after about 292 years of summed latency.
 *
 * Not thread-safe: one writer, and reads after the writes (see [[LatencyRecorder]]).
 */
private[weir] final class LogHistogram:
  import LogHistogram.*

  // a group without values shares `Unused`, which holds no count (a group's counts are never empty)
  private val groups = Array.fill(Groups)(Unused)
  private var total = 0L
  private var sum = 0L
  private var minimum = Long.MaxValue // the bounds of the buckets in use, while `total > 0`
  private var maximum = 0L

  def count: Long = total

  /** The sum of the values counted. */
  def sumOfValues: Long = sum

  /** The largest value counted (zero when none). */
  def max: Long = maximum

  /** Counts `value`; a negative value (a clock that went back) counts as zero. */
  def record(value: Long): Unit =
    val v = math.max(0L, value)
    val g = groupOf(v)
    var counts = groups(g)
    if counts.length == 0 then
      counts = new Array[Long](Sub)
      groups(g) = counts
    counts(indexIn(g, v)) += 1
    total += 1
    sum += v
    if v < minimum then minimum = v
    if v > maximum then maximum = v

  /** Adds every value of `other` to this one; `other` is unchanged. */
  def add(other: LogHistogram): Unit =
    if other.total > 0 then
      val lastGroup = groupOf(other.maximum)
      val lastIndex = indexIn(lastGroup, other.maximum)
      var g = groupOf(other.minimum)
      var i = indexIn(g, other.minimum)
      while g <= lastGroup do
        val theirs = other.groups(g)
        if theirs.length != 0 then
          var mine = groups(g)
          if mine.length == 0 then
            mine = new Array[Long](Sub)
            groups(g) = mine
          val end = if g == lastGroup then lastIndex else Sub - 1
          while i <= end do
            mine(i) += theirs(i)
            i += 1
        g += 1
        i = 0
      total += other.total
      sum += other.sum
      if other.minimum < minimum then minimum = other.minimum
      if other.maximum > maximum then maximum = other.maximum

  /**
   * How many values fall in each bucket bounded by `bounds` (ascending, each an inclusive upper bound):
   * `bounds.length + 1` counts, the last for the values above every bound. A bucket of this histogram
   * that straddles a bound is counted below it, so a value above a bound by less than this histogram's
   * precision (2^-[[SubBits]] of the bound) may be counted below it.
   */
  def countsUpTo(bounds: Array[Long]): Array[Long] =
    val counts = new Array[Long](bounds.length + 1)
    if total > 0 then
      var b = 0 // the first bound at or above the current bucket's lowest value
      val lastGroup = groupOf(maximum)
      val lastIndex = indexIn(lastGroup, maximum)
      var g = groupOf(minimum)
      var i = indexIn(g, minimum)
      while g <= lastGroup do
        val mine = groups(g)
        if mine.length != 0 then
          val end = if g == lastGroup then lastIndex else Sub - 1
          while i <= end do
            val n = mine(i)
            if n != 0 then
              val lowest = lowestIn(g, i)
              while b < bounds.length && bounds(b) < lowest do b += 1
              counts(b) += n
            i += 1
        g += 1
        i = 0
    counts

  /** Count, mean, the nearest-rank percentiles 50, 90, 99 and 99.9, and the maximum. */
  def latency: Latency =
    if total == 0 then Latency.empty
    else
      // nearest rank in integers: ceil(permille * total / 1000), at least 1
      val ranks = PerMille.map(pm => math.max(1L, (pm * total + 999) / 1000))
      val values = new Array[Long](ranks.length)
      var next = 0 // the first percentile not found yet
      var seen = 0L
      var g = groupOf(minimum)
      var i = indexIn(g, minimum)
      while next < ranks.length do // the maximum's bucket holds every rank still missing
        val counts = groups(g)
        if counts.length != 0 then
          while i < Sub && next < ranks.length do
            seen += counts(i)
            while next < ranks.length && seen >= ranks(next) do
              values(next) = math.min(highestIn(g, i), maximum)
              next += 1
            i += 1
        g += 1
        i = 0
      Latency(
        count = total,
        mean = (sum / total).nanos,
        p50 = values(0).nanos,
        p90 = values(1).nanos,
        p99 = values(2).nanos,
        p999 = values(3).nanos,
        max = maximum.nanos
      )

private[weir] object LogHistogram:

  /** Sub-buckets per power of two: `2^SubBits`, so a bucket spans under 0.1% of its values. */
  final val SubBits = 10
  private final val Sub = 1 << SubBits

  /** Group 0 holds the values below `Sub`, group `g >= 1` those whose top bit is `g - 1 + SubBits`. */
  private final val Groups = 64 - SubBits

  /** The counts of every group that holds no value yet. */
  private val Unused: Array[Long] = Array.emptyLongArray

  /** The percentiles reported, in thousandths: 50, 90, 99 and 99.9. */
  private val PerMille = Array(500L, 900L, 990L, 999L)

  private def groupOf(v: Long): Int =
    if v < Sub then 0 else 64 - java.lang.Long.numberOfLeadingZeros(v) - SubBits

  private def indexIn(group: Int, v: Long): Int =
    if group == 0 then v.toInt else (v >>> (group - 1)).toInt - Sub

  /** The lowest value that falls in bucket `index` of `group`. */
  private def lowestIn(group: Int, index: Int): Long =
    if group == 0 then index.toLong else (index.toLong + Sub) << (group - 1)

  /** The highest value that falls in bucket `index` of `group`. */
  private def highestIn(group: Int, index: Int): Long =
    if group == 0 then index.toLong else ((index.toLong + Sub + 1) << (group - 1)) - 1
