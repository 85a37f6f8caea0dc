package weir.lab
package compare

import munit.FunSuite
import weir.lab.compare.scenarios.*

class IdealSuite extends FunSuite:

  test("one slot runs the tasks back to back") {
    assertEquals(Ideal.makespan(Seq(0L, 0L, 0L), Seq(1L, 2L, 3L), slots = 1), 6L)
  }

  test("a slot waits for a task that is not yet available") {
    assertEquals(Ideal.makespan(Seq(0L, 100L), Seq(10L, 10L), slots = 1), 110L)
  }

  test("first come, first served: not the optimal packing") {
    // 0–1, 0–1, then the long task 1–3; longest-first would finish at 2
    assertEquals(Ideal.makespan(Seq(0L, 0L, 0L), Seq(1L, 1L, 2L), slots = 2), 3L)
  }

  test("more slots than tasks: the makespan is the latest availability plus duration") {
    assertEquals(Ideal.makespan(Seq(0L, 5L, 9L), Seq(10L, 10L, 1L), slots = 10), 15L)
  }

  test("arrivals: producers own contiguous batches and wait out their own delays") {
    val a1 = Fixtures.smallPlan.arrivals(1)
    assertEquals(
      a1.map(a => (a.at, a.task)),
      Vector((100L, 0), (100L, 1), (200L, 2), (200L, 3), (300L, 4), (300L, 5))
    )
    val a2 = Fixtures.smallPlan.arrivals(2)
    assertEquals(
      a2.map(a => (a.at, a.producer, a.task)),
      Vector((100L, 0, 0), (100L, 0, 1), (100L, 1, 2), (100L, 1, 3), (200L, 1, 4), (200L, 1, 5))
    )
  }

  test("the seed's slow-producer shape: 10 s of producing plus the last batch's longest task") {
    val plan = Plan.draw(Workload.slowProducer, seed = 0L, run = 0)
    val lastBatch = Workload.slowProducer.idsOf(9).map(plan.consumeMs).max
    assertEquals(Ideal.of(plan, 1).makespan, 10000L + lastBatch)
  }

  test("plans are drawn again exactly from the seed and the run, and differ between runs") {
    val w = Workload.balanced
    assertEquals(Plan.draw(w, 5L, 1), Plan.draw(w, 5L, 1))
    assertNotEquals(Plan.draw(w, 5L, 1).consumeMs, Plan.draw(w, 5L, 2).consumeMs)
    val c = Plan.draw(w, 5L, 1).consumeMs
    assert(c.forall(d => d >= 10 && d < 2000), c.toString)
  }

  test("bursty producers pause before every n-th batch") {
    val w = Workload.slowConsumer.copy(burst = Some(Burst(3, 500)))
    assertEquals(Plan.draw(w, 0L, 0).produceMs.take(7), Vector(10L, 10L, 10L, 510L, 10L, 10L, 510L))
  }
