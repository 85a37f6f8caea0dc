package weir.internal

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

import scala.concurrent.duration.*

class LogHistogramSuite extends ScalaCheckSuite:

  private val values: Gen[Vector[Long]] =
    val one = Gen.frequency(
      3 -> Gen.choose(0L, 5000L), // exact buckets and the first groups
      3 -> Gen.choose(100000L, 5000000000L), // I/O-like latencies
      1 -> Gen.choose(0L, Long.MaxValue), // the top groups
      1 -> Gen.choose(Long.MinValue, -1L) // a clock that went back: zero
    )
    Gen.choose(1, 2000).flatMap(n => Gen.containerOfN[Vector, Long](n, one))

  private def histogramOf(vs: Seq[Long]): LogHistogram =
    val h = new LogHistogram
    vs.foreach(h.record)
    h

  /** The exact nearest-rank percentile: the smallest value with at least `p`% of the values at or below it. */
  private def nearestRank(sorted: Vector[Long], perMille: Int): Long =
    sorted(((BigInt(perMille) * sorted.size + 999) / 1000).toInt.max(1) - 1)

  property("count and maximum are exact; each percentile is the exact one or above it by less than 2^-10") {
    Prop.forAll(values) { raw =>
      val vs = raw.map(_.max(0L))
      val sorted = vs.sorted
      val latency = histogramOf(raw).latency
      assertEquals(latency.count, vs.size.toLong)
      assertEquals(latency.max, sorted.last.nanos)
      List(500 -> latency.p50, 900 -> latency.p90, 990 -> latency.p99, 999 -> latency.p999).foreach {
        (p, reported) =>
          val exact = nearestRank(sorted, p)
          val r = reported.toNanos
          assert(
            r >= exact && BigInt(r - exact) * 1024 <= BigInt(exact),
            s"per mille $p: reported $r, exact $exact"
          )
      }
    }
  }

  property("values clustered in a few buckets (the reads walk only those): percentiles and adds as for any") {
    val clustered = Gen.choose(0L, 1L << 40).flatMap { low =>
      Gen.choose(1, 500).flatMap(n => Gen.containerOfN[Vector, Long](n, Gen.choose(low, low + low / 200 + 3)))
    }
    Prop.forAllNoShrink(clustered, Gen.choose(0, 500)) { (vs, at) => // a shrunk value may leave the cluster
      val sorted = vs.sorted
      val whole = histogramOf(vs)
      val latency = whole.latency
      assertEquals((latency.count, latency.max), (vs.size.toLong, sorted.last.nanos))
      val exact = nearestRank(sorted, 500)
      assert(latency.p50.toNanos >= exact && (latency.p50.toNanos - exact) * 1024 <= exact)
      val (a, b) = vs.splitAt(at)
      val merged = histogramOf(b)
      merged.add(histogramOf(a))
      assertEquals(merged.latency, latency)
      val belowAll = sorted.head - sorted.head / 1024 - 2 // below the lowest bucket in use
      assertEquals(whole.countsUpTo(Array(belowAll, sorted.last)).toList, List(0L, vs.size.toLong, 0L))
    }
  }

  property("the mean is the exact sum over the count, rounded down, while the sum fits a Long") {
    Prop.forAll(Gen.nonEmptyContainerOf[Vector, Long](Gen.choose(0L, 1L << 40))) { vs =>
      assertEquals(histogramOf(vs).latency.mean, (vs.sum / vs.size).nanos)
    }
  }

  property("adding histograms is recording their values into one, in any split") {
    Prop.forAll(values, Gen.choose(0, 2000)) { (vs, at) =>
      val (a, b) = vs.splitAt(at)
      val merged = histogramOf(a)
      merged.add(histogramOf(b))
      assertEquals(merged.latency, histogramOf(vs).latency)
    }
  }

  test("values below 2048 are exact: the percentiles of 1..1000 are their nearest ranks") {
    val latency = histogramOf(1L to 1000L).latency
    assertEquals(
      (latency.p50, latency.p90, latency.p99, latency.p999, latency.max, latency.mean),
      (500.nanos, 900.nanos, 990.nanos, 999.nanos, 1000.nanos, 500.nanos)
    )
  }

  test("a bucket above 2048 reports its highest value, capped by the maximum") {
    // 1 ms lies in group 10 (top bit 19): buckets of 2^9 = 512 ns; 1,000,000 is in [999,936, 1,000,447]
    val one = histogramOf(List(1000000L, 1000000L, 2000000L)).latency
    assertEquals(one.p50, 1000447.nanos)
    assertEquals(one.p999, 2000000.nanos)
    assertEquals(histogramOf(List(1000000L)).latency.p50, 1000000.nanos)
  }

  property("counts up to bounds: each bound's count is exact, or holds values above it by less than 2^-10") {
    val bounds = Gen
      .choose(1, 12)
      .flatMap(n => Gen.containerOfN[Vector, Long](n, Gen.choose(0L, 6000000000L)))
      .map(_.distinct.sorted)
    Prop.forAll(values, bounds) { (raw, bs) =>
      val vs = raw.map(_.max(0L))
      val counts = histogramOf(raw).countsUpTo(bs.toArray)
      assertEquals(counts.length, bs.size + 1)
      assertEquals(counts.sum, vs.size.toLong)
      bs.indices.foreach { i =>
        val upTo = counts.take(i + 1).sum // counted at or below bound i
        val exact = vs.count(_ <= bs(i)).toLong
        val near =
          vs.count(v => v > bs(i) && v - bs(i) <= bs(i) / 1024).toLong // within the precision above it
        assert(
          upTo >= exact && upTo <= exact + near,
          s"bound ${bs(i)}: $upTo counted, $exact exact, $near near"
        )
      }
    }
  }
