package weir.cli

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

import scala.concurrent.duration.*

/** How every option reads and shows a duration: a number and a unit, never a bare number. */
class DurationsSuite extends ScalaCheckSuite:

  test("a number and a unit: ms, s, m, h, decimals included") {
    assertEquals(Durations.parse("250ms"), Right(250.millis))
    assertEquals(Durations.parse("5s"), Right(5.seconds))
    assertEquals(Durations.parse("1.5s"), Right(1500.millis))
    assertEquals(Durations.parse("2m"), Right(2.minutes))
    assertEquals(Durations.parse("1h"), Right(1.hour))
    assertEquals(Durations.parse("0s"), Right(Duration.Zero))
    assertEquals(Durations.parse("0.25ms"), Right(250.micros))
  }

  test("a bare number, another unit, a sign or words are refused") {
    List("5", "0", "5 seconds", "5sec", "-5s", "+5s", "5d", "s", "", "1e3ms", "Inf", "0.0000001ms").foreach(
      t =>
        assert(Durations.parse(t).isLeft, t)
    )
    assert(Durations.parse("99999999999h").isLeft)
  }

  test("shown in the largest unit it is a whole number of") {
    assertEquals(
      List(
        2.seconds,
        100.millis,
        10.minutes,
        90.seconds,
        2.hours,
        Duration.Zero,
        1500.micros
      ).map(Durations.show),
      List("2s", "100ms", "10m", "90s", "2h", "0s", "1.5ms")
    )
  }

  property("what is shown reads back as the same duration") {
    val durations = Gen.oneOf(
      Gen.choose(0L, 10_000_000L).map(_.micros),
      Gen.choose(0L, 100_000L).map(_.millis),
      Gen.choose(0L, 10_000L).map(_.seconds),
      Gen.choose(0L, 1000L).map(_.minutes)
    )
    Prop.forAll(durations)(d => Durations.parse(Durations.show(d)) == Right(d))
  }
