package weir.postgres

import org.scalacheck.Gen
import org.scalacheck.rng.Seed

/**
 * Draws of a generator from a fixed seed, for suites whose every draw is a test of its own (a database each):
 * a failure names a draw that runs again the same.
 */
object FixedDraws:
  def apply[A](gen: Gen[A], seed: Long, n: Int): Vector[A] =
    Iterator.from(1).map(k => gen(Gen.Parameters.default, Seed(seed).reseed(k.toLong)))
      .collect { case Some(a) => a }.take(n).toVector
