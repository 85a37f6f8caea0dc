package weir.lab

import scala.util.Random

/**
 * A distribution of delays in whole milliseconds, sampled from a seeded `Random` so that a plan can be
 * drawn again exactly. Every sample is clamped to `[0, cap]` where a distribution has a cap.
 */
enum Delay:

  /** Always `ms`. */
  case Fixed(ms: Long)

  /** Uniform on `[min, max)` (the write-up's `Random.nextLong(max - min) + min`); `min` when they are equal. */
  case Uniform(min: Long, max: Long)

  /** `min` plus an exponential with mean `mean - min`, cut at `max`. */
  case Exponential(mean: Double, min: Long, max: Long)

  /** Pareto (heavy-tailed) with scale `min` and tail index `shape`, cut at `max`. */
  case Pareto(min: Long, shape: Double, max: Long)

  def sample(rnd: Random): Long = this match
    case Fixed(ms) => ms
    case Uniform(lo, hi) => if hi == lo then lo else lo + rnd.nextLong(hi - lo)
    case Exponential(mean, lo, hi) =>
      val u = 1.0 - rnd.nextDouble() // (0, 1]
      math.min(hi, lo + math.round(-math.log(u) * (mean - lo)))
    case Pareto(lo, shape, hi) =>
      val u = 1.0 - rnd.nextDouble()
      math.min(hi, math.round(lo / math.pow(u, 1.0 / shape)))

  /** A short label for tables: `10–100 ms`, `exp(mean 50) ms`… */
  def label: String = this match
    case Fixed(ms) => s"$ms ms"
    case Uniform(lo, hi) => s"$lo–$hi ms"
    case Exponential(mean, lo, hi) => f"exp(mean $mean%.0f, $lo–$hi) ms"
    case Pareto(lo, shape, hi) => f"pareto(min $lo, α $shape%.2f, max $hi) ms"

object Delay:

  /** Checks the parameters; the message names the bad value. */
  def validate(d: Delay): Either[String, Delay] = d match
    case Fixed(ms) => Either.cond(ms >= 0, d, s"fixed delay must be >= 0 ms, was: $ms")
    case Uniform(lo, hi) =>
      if lo < 0 then Left(s"uniform min must be >= 0 ms, was: $lo")
      else Either.cond(hi >= lo, d, s"uniform max must be >= min ($lo), was: $hi")
    case Exponential(mean, lo, hi) =>
      if lo < 0 then Left(s"exponential min must be >= 0 ms, was: $lo")
      else if !(mean > lo) then Left(s"exponential mean must be > min ($lo), was: $mean")
      else Either.cond(hi >= lo, d, s"exponential max must be >= min ($lo), was: $hi")
    case Pareto(lo, shape, hi) =>
      if lo <= 0 then Left(s"pareto min must be > 0 ms, was: $lo")
      else if !(shape > 0) then Left(s"pareto shape must be > 0, was: $shape")
      else Either.cond(hi >= lo, d, s"pareto max must be >= min ($lo), was: $hi")
