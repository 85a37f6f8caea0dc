package weir.otel

import cats.effect.IO
import cats.effect.unsafe.implicits.global
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader
import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}
import weir.InvalidSettings

import scala.concurrent.duration.*

/**
 * Random bad latency bounds (empty, a negative one, out of order, repeated): choosing them throws nothing,
 * and both entry points fail in `F` with an [[InvalidSettings]] naming every bound.
 */
class WeirMetricsSettingsPropertySuite extends ScalaCheckSuite:

  override def scalaCheckTestParameters = super.scalaCheckTestParameters.withMinSuccessfulTests(30)

  private val ascending: Gen[Vector[FiniteDuration]] =
    Gen.listOfN(4, Gen.choose(1L, 1000L)).map(_.scanLeft(0L)(_ + _).drop(1).map(_.millis).toVector)

  private val bad: Gen[Vector[FiniteDuration]] = Gen.oneOf(
    Gen.const(Vector.empty[FiniteDuration]),
    ascending.flatMap(b => Gen.choose(-1000L, -1L).map(n => n.millis +: b)), // a negative first bound
    ascending.map(_.reverse), // descending
    ascending.map(b => b :+ b.last) // repeated
  )

  property("bad bounds throw nothing until used, then fail both entry points naming every bound") {
    Prop.forAll(bad) { bounds =>
      val meter = org.typelevel.otel4s.metrics.Meter.noop[IO]
      val registered = WeirMetrics.register(meter, None, bounds).use_.attempt.unsafeRunSync()
      val onSdk = WeirMetrics.onSdk[IO](InMemoryMetricReader.create(), bounds).use_.attempt.unsafeRunSync()
      List(registered, onSdk).foreach {
        case Left(e: InvalidSettings) =>
          assert(e.getMessage.startsWith("invalid WeirMetrics: "), e.getMessage)
          if bounds.isEmpty then assert(e.getMessage.contains("must not be empty"), e.getMessage)
          else assert(e.getMessage.contains(s"were: ${bounds.mkString(", ")}"), e.getMessage)
        case other => fail(s"expected InvalidSettings for $bounds, got $other")
      }
    }
  }

  property("good bounds have no errors") {
    Prop.forAll(ascending)(bounds => assertEquals(WeirMetrics.boundsErrors(bounds), Nil))
  }
