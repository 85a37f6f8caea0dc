package weir.lab.requests

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

/** The ideal schedule and Little's bound on hand-made cases, and the server's delay function. */
class RequestIdealSuite extends ScalaCheckSuite:

  private def ideal(delays: Long*)(concurrency: Int) =
    RequestIdeal.of(delays.size.toLong, concurrency, i => delays(i.toInt))

  test("one slot: the delays add up") {
    assertEquals(ideal(3, 1, 2)(1).makespanMs, 6L)
  }

  test("a long request holds one slot while the others share the rest") {
    // slot A: request 0 (0–5); slot B: 1 (0–1), 2 (1–2), 3 (2–3)
    assertEquals(ideal(5, 1, 1, 1)(2).makespanMs, 5L)
  }

  test("first come first served: a request takes the slot that frees first") {
    // 0 and 1 run 0–2; 2 takes a slot at 2 (ends 5), 3 the other at 2 (ends 3)
    assertEquals(ideal(2, 2, 3, 1)(2).makespanMs, 5L)
    // 0 runs 0–4, 1 runs 0–1; 2 starts at 1 (ends 4), 3 starts at 4 (ends 10)
    assertEquals(ideal(4, 1, 3, 6)(2).makespanMs, 10L)
  }

  test("more slots than requests: the longest delay; no requests: zero") {
    assertEquals(ideal(7, 3, 9, 1)(10).makespanMs, 9L)
    assertEquals(ideal()(5).makespanMs, 0L)
    assertEquals(ideal()(5).meanDelayMs, 0.0)
  }

  test("Little's bound is concurrency over the mean delay") {
    val f = ideal(1000, 2000, 1500, 1500)(5000)
    assertEquals(f.meanDelayMs, 1500.0)
    assertEqualsDouble(f.littleBoundPerSecond, 5000 / 1.5, 1e-9)
    assertEquals(ideal(0, 0)(3).littleBoundPerSecond, Double.PositiveInfinity)
  }

  test("a finite run stays below Little's bound, and tends to it") {
    val small = RequestIdeal.ofServer(10_000, 100, 0L, 3000)
    val large = RequestIdeal.ofServer(200_000, 100, 0L, 3000)
    def share(f: RequestIdeal.Figures, n: Long) = n * 1000.0 / f.makespanMs / f.littleBoundPerSecond
    assert(share(small, 10_000) < 1.0)
    assert(share(large, 200_000) < 1.0)
    assert(share(large, 200_000) > share(small, 10_000), (share(small, 10_000), share(large, 200_000)))
    assert(share(large, 200_000) > 0.99, share(large, 200_000))
  }

  test("the ideal refuses bad arguments, naming the value") {
    val _ = interceptMessage[IllegalArgumentException]("requirement failed: concurrency must be > 0, was: 0")(
      RequestIdeal.of(3, 0, _ => 1L)
    )
    val _ = interceptMessage[IllegalArgumentException](
      "requirement failed: delay of request 1 must be >= 0 ms, was: -4"
    )(
      RequestIdeal.of(3, 2, i => if i == 1 then -4L else 1L)
    )
    val _ =
      interceptMessage[IllegalArgumentException]("requirement failed: max delay must be > 0 ms, was: 0")(
        DelayServer.delayMs(0, 1, 0)
      )
  }

  property("a delay is a pure function of (seed, id), in [0, max)") {
    Prop.forAll(Gen.long, Gen.long, Gen.chooseNum(1L, 1L << 40)) { (seed, id, max) =>
      val d = DelayServer.delayMs(seed, id, max)
      d >= 0 && d < max && d == DelayServer.delayMs(seed, id, max)
    }
  }

  test("delays are spread evenly over [0, max)") {
    val n = 300_000
    val buckets = new Array[Int](10)
    var sum = 0L
    (0 until n).foreach { i =>
      val d = DelayServer.delayMs(7L, i.toLong, 3000)
      sum += d
      buckets((d / 300).toInt) += 1
    }
    assertEqualsDouble(sum.toDouble / n, 1499.5, 10.0)
    buckets.foreach(b => assert(math.abs(b - n / 10) < n / 100, buckets.mkString(",")))
    assertNotEquals(DelayServer.delayMs(1L, 5, 3000), DelayServer.delayMs(2L, 5, 3000))
  }
