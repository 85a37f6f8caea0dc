package weir.internal

import java.math.BigInteger

/**
 * The time one permit of a [[weir.RateLimiter]] takes, as the exact fraction `nanos / permits` nanoseconds
 * (in lowest terms), so that refills computed from it never drift. Long arithmetic when both terms and the
 * products fit (any rate with a short decimal form), BigInteger otherwise.
 */
private[weir] final class RateInterval(n: BigInteger, p: BigInteger):
  import RateInterval.*

  private val gcd = n.gcd(p)
  val nanos: BigInteger = n.divide(gcd)
  val permits: BigInteger = p.divide(gcd)
  // whether both terms fit a Long: only then are `nanosL` and `permitsL` the terms
  private val small = nanos.bitLength < 63 && permits.bitLength < 63
  private val nanosL = nanos.longValue
  private val permitsL = permits.longValue

  def permitsPerSecond: Double =
    new java.math.BigDecimal(permits.multiply(NanosPerSecond))
      .divide(new java.math.BigDecimal(nanos), java.math.MathContext.DECIMAL64)
      .doubleValue

  /** ⌊elapsed × permits / nanos⌋: whole permits earned in `elapsed` ≥ 0 ns (at most [[Cap]]). */
  def earned(elapsed: Long): Long =
    if small && Math.multiplyHigh(elapsed, permitsL) == 0 && elapsed * permitsL >= 0 then
      math.min(elapsed * permitsL / nanosL, Cap)
    else clamp(BigInteger.valueOf(elapsed).multiply(permits).divide(nanos))

  /** ⌈k × nanos / permits⌉: nanoseconds needed to earn `k` > 0 permits (at most [[Cap]]). */
  def needed(k: Long): Long =
    if small && Math.multiplyHigh(k, nanosL) == 0 && k * nanosL >= 0 then
      val product = k * nanosL
      math.min(product / permitsL + (if product % permitsL == 0 then 0L else 1L), Cap)
    else
      val qr = BigInteger.valueOf(k).multiply(nanos).divideAndRemainder(permits)
      clamp(if qr(1).signum == 0 then qr(0) else qr(0).add(BigInteger.ONE))

  private def clamp(b: BigInteger): Long = if b.bitLength < 63 then math.min(b.longValue, Cap) else Cap

private[weir] object RateInterval:

  val NanosPerSecond: BigInteger = BigInteger.valueOf(1000000000L)

  /** The largest count or duration (in ns) the arithmetic produces; far beyond any real run. */
  val Cap: Long = Long.MaxValue / 4
