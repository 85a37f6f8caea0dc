package weir

import cats.effect.IO
import cats.effect.unsafe.implicits.global
import fs2.Stream
import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

import scala.concurrent.duration.*

/**
 * Random invalid settings, several bad fields at once: building them and copying them throws nothing, and
 * the run that uses them fails in `F` with one [[InvalidSettings]] whose message names every bad field with
 * its value, before any task is handled.
 */
class InvalidSettingsPropertySuite extends ScalaCheckSuite:

  /** One bad setting: how it changes a pipeline, and the error that must name it. */
  final case class Bad(set: Pipeline[IO, Int, Int] => Pipeline[IO, Int, Int], error: String):
    override def toString: String = error

  private val nonPositive = Gen.chooseNum(Int.MinValue, 0)
  private val negative = Gen.chooseNum(-1000000L, -1L).map(_.millis)

  private val bads: Vector[Gen[Bad]] = Vector(
    nonPositive.map(n => Bad(_.withLimit(Limit.fixed(n)), s"concurrency limit must be > 0, was: $n")),
    Gen.chooseNum(Int.MinValue, 0).map(m =>
      Bad(_.withLimit(Limit.adaptive(min = m, initial = 1)), s"adaptive limit: min must be > 0, was: $m")
    ),
    Gen.chooseNum(0.01, 0.99).map(t =>
      Bad(
        _.withLimit(Limit.adaptive(algorithm = AdaptiveAlgorithm.gradient(tolerance = t))),
        s"adaptive limit: gradient tolerance must be >= 1, was: $t"
      )
    ),
    nonPositive.map(n => Bad(_.withBuffer(n), s"buffer capacity must be > 0, was: $n")),
    nonPositive.map(n => Bad(_.withOrder(TaskOrder.inputOrder(n)), s"reorder window must be > 0, was: $n")),
    negative.map(d => Bad(_.withReleaseGrace(d), s"release grace must be >= 0, was: $d")),
    Gen.oneOf(negative, Gen.const(Duration.Zero)).map(d =>
      Bad(_.withTaskTimeout(d), s"task timeout must be > 0, was: $d")
    ),
    nonPositive.map(n =>
      Bad(
        _.withRetry(Retry.exponential(1.milli, maxAttempts = n)),
        s"retry: maxAttempts must be >= 1, was: $n"
      )
    ),
    Gen.oneOf(Gen.chooseNum(-10.0, 0.99), Gen.const(Double.NaN), Gen.const(Double.PositiveInfinity)).map(f =>
      Bad(
        _.withRetry(Retry.exponential(1.milli, maxAttempts = 3, factor = f)),
        s"retry: retry factor must be finite and >= 1, was: $f"
      )
    ),
    Gen.chooseNum(Int.MinValue, -1).map(n =>
      Bad(_.withFailureSample(n), s"failure sample must be >= 0, was: $n")
    )
  )

  // distinct kinds of bad field, so that none overrides another (a second withLimit replaces the first)
  private val kinds = Vector(Set(0, 1, 2), Set(3), Set(4), Set(5), Set(6), Set(7, 8), Set(9))

  private val scenarios: Gen[List[Bad]] =
    for
      n <- Gen.choose(1, kinds.size)
      chosen <- Gen.pick(n, kinds.indices)
      picks <- Gen.sequence[List[Int], Int](chosen.toList.map(k => Gen.oneOf(kinds(k).toSeq)))
      bad <- Gen.sequence[List[Bad], Bad](picks.map(bads))
    yield bad

  property("construction and copy never throw; the run fails with every bad field and its value") {
    Prop.forAll(scenarios) { bad =>
      val handled = new java.util.concurrent.atomic.AtomicInteger
      val pipeline =
        bad.foldLeft(Pipeline(Stream.range(0, 10).covary[IO]).process(i =>
          IO(handled.incrementAndGet()).as(i)
        ))((p, b) => b.set(p))
      val errors = pipeline.errors
      val outcome = pipeline.run.attempt.unsafeRunSync()
      outcome match
        case Left(e: InvalidSettings) =>
          bad.foreach(b =>
            assert(e.getMessage.contains(b.error), s"'${e.getMessage}' does not name '${b.error}'")
          )
          assertEquals(e.errors.size, bad.size, e.getMessage)
          assertEquals(e.errors, errors)
          assert(e.getMessage.startsWith("invalid Pipeline: "), e.getMessage)
          assertEquals(handled.get, 0)
        case other => fail(s"expected InvalidSettings for $bad, got $other")
    }
  }

  property("valid settings have no errors and run") {
    Prop.forAll(Gen.choose(1, 64), Gen.choose(1, 64)) { (limit, buffer) =>
      val p = Pipeline(Stream.range(0, 20).covary[IO]).process(IO.pure)
        .withLimit(Limit.fixed(limit))
        .withBuffer(buffer)
        .withOrder(TaskOrder.inputOrder(limit))
      assertEquals(p.errors, Nil)
      assertEquals(p.run.unsafeRunSync().succeeded, 20L)
    }
  }
