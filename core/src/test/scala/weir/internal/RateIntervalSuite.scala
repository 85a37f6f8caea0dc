package weir.internal

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

import java.math.BigInteger

/**
 * A rate's interval against BigInteger arithmetic: the permits earned in a time and the time a count of
 * permits needs are exact (floor and ceiling of the fraction, capped), whether the Long path or the
 * BigInteger path computes them, and each is the other's inverse.
 */
class RateIntervalSuite extends ScalaCheckSuite:

  private val cap = BigInteger.valueOf(RateInterval.Cap)
  private def capped(b: BigInteger): Long = b.min(cap).longValue

  // terms from tiny to beyond a Long's range, so that both paths run
  private val term: Gen[BigInteger] = Gen.oneOf(
    Gen.choose(1L, 1000L).map(BigInteger.valueOf),
    Gen.choose(1L, Long.MaxValue).map(BigInteger.valueOf),
    Gen.choose(1L, Long.MaxValue).map(l => BigInteger.valueOf(l).shiftLeft(40).add(BigInteger.ONE))
  )
  private val time: Gen[Long] = Gen.oneOf(Gen.choose(0L, 10000000000L), Gen.choose(0L, Long.MaxValue))

  property("earned is ⌊elapsed × permits / nanos⌋, capped") {
    Prop.forAll(term, term, time) { (n, p, elapsed) =>
      val i = RateInterval(n, p)
      assertEquals(i.earned(elapsed), capped(BigInteger.valueOf(elapsed).multiply(p).divide(n)))
    }
  }

  property("needed is ⌈k × nanos / permits⌉, capped, and the first time at which k permits are earned") {
    Prop.forAll(term, term, Gen.choose(1L, 1000000L)) { (n, p, k) =>
      val i = RateInterval(n, p)
      val qr = BigInteger.valueOf(k).multiply(n).divideAndRemainder(p)
      val exact = if qr(1).signum == 0 then qr(0) else qr(0).add(BigInteger.ONE)
      val t = i.needed(k)
      assertEquals(t, capped(exact))
      if t < RateInterval.Cap then
        assert(i.earned(t) >= k, s"earned(${t}) = ${i.earned(t)} < $k")
        assert(t == 0 || i.earned(t - 1) < k, s"earned(${t - 1}) = ${i.earned(t - 1)} >= $k")
    }
  }

  test("the fraction is kept in lowest terms, and its rate per second read back") {
    val i = RateInterval(BigInteger.valueOf(3000000000L), BigInteger.valueOf(1000L))
    assertEquals((i.nanos.longValue, i.permits.longValue), (3000000L, 1L))
    assertEqualsDouble(i.permitsPerSecond, 1000.0 / 3, 1e-9)
  }
