package weir

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

import scala.concurrent.duration.*

/**
 * A service's settings and backoff on random values: every bad value is named in `errors` (and building
 * or copying the record throws nothing), and a backoff's waits grow from `first` to `max` and never beyond.
 */
class ServicePropertySuite extends ScalaCheckSuite:

  private val millis = Gen.chooseNum(0L, 100000L).map(_.millis)
  private val negative = Gen.chooseNum(-100000L, -1L).map(_.millis)

  property("a backoff's waits start at first, never shrink, and never exceed max") {
    Prop.forAll(millis, millis, Gen.listOfN(20, Gen.chooseNum(1L, 80L))) { (a, b, counts) =>
      val backoff = Service.Backoff(a.min(b), a.max(b))
      assertEquals(backoff.errors, Nil)
      assertEquals(backoff.after(1L), backoff.first)
      counts.sorted.sliding(2).foreach {
        case List(n, m) =>
          assert(backoff.after(n) <= backoff.after(m), s"after($n) > after($m)")
          assert(backoff.after(m) <= backoff.max, s"after($m) > ${backoff.max}")
        case _ => ()
      }
    }
  }

  property("each bad value of the settings is named, and only those") {
    Prop.forAll(Gen.oneOf(millis, negative), Gen.oneOf(millis, negative), Gen.oneOf(millis, negative)) {
      (every, firstAfter, first) =>
        val settings = Service.Settings("poller", every, Service.Backoff(first, first.max(Duration.Zero)))
          .copy(firstAfter = firstAfter)
        val expected =
          Option.when(every < Duration.Zero)(s"every must be >= 0, was: $every").toList ++
            Option.when(first < Duration.Zero)(s"backoff: first must be >= 0, was: $first").toList ++
            Option.when(firstAfter < Duration.Zero)(s"firstAfter must be >= 0, was: $firstAfter").toList
        assertEquals(settings.errors, expected)
    }
  }
