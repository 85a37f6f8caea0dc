package weir.lab.soak

import munit.FunSuite

class HeapSeriesSuite extends FunSuite:

  test("growth is the fitted slope of the last half times its length") {
    // 1 MiB every 10 s, plus noise that averages out: over the last 300 s of a 600 s run, 30 MiB
    val samples = (0 to 60).toVector.map(i => (i * 10.0, 50.0 + i + (if i % 2 == 0 then 0.5 else -0.5)))
    assertEqualsDouble(HeapSeries(samples).growth(600), 30.0, 0.2)
  }

  test("a flat heap with one high sample in the first half grows by nothing") {
    val samples = (0 to 60).toVector.map(i => (i * 10.0, if i == 10 then 90.0 else 40.0))
    assertEqualsDouble(HeapSeries(samples).growth(600), 0.0, 1e-9)
  }

  test("samples after the run's end and before its middle do not count") {
    val samples =
      Vector(0.0 -> 10.0, 100.0 -> 20.0, 150.0 -> 20.0, 200.0 -> 20.0, 250.0 -> 20.0, 300.0 -> 500.0)
    assertEqualsDouble(HeapSeries(samples).growth(200), 0.0, 1e-9)
    assertEquals(HeapSeries(samples).during(200).samples.size, 4)
  }

  test("too few samples: no growth rather than a guess") {
    assertEqualsDouble(HeapSeries(Vector(100.0 -> 5.0)).growth(200), 0.0, 1e-9)
  }
