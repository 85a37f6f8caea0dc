package weir.lab
package compare

import cats.syntax.all.*
import munit.CatsEffectSuite
import weir.lab.compare.approaches.*
import weir.lab.compare.scenarios.*

import scala.concurrent.duration.*

/**
 * The ideal of a run's own start order ([[Ideal.inOrder]]): the lower bound every run is held to, where the
 * first-come-first-served ideal is not one.
 */
class OwnOrderSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 300.seconds

  /** Tasks 0, 1 and 2 all due at 0 ms (one batch), lasting 1, 1 and 2 ms, on two slots. */
  private val threeTasks =
    val w = Workload(
      "three",
      tasks = 3,
      batch = 3,
      producers = 1,
      slots = 2,
      buffer = 3,
      Delay.Fixed(0),
      Delay.Fixed(1)
    )
    Plan(w, seed = 0L, run = 0, produceMs = Vector(0L), consumeMs = Vector(1L, 1L, 2L))

  test("another order than first come, first served can end sooner than the ideal") {
    assertEquals(Ideal.of(threeTasks, 1).makespan, 3L) // 0 and 1 at once, then 2 on the slot they free
    assertEquals(Ideal.inOrder(threeTasks, 1, Vector(2, 0, 1)), 2L) // 2 on one slot, 0 then 1 on the other
  }

  test("an order waits for each task's availability, and the slot that frees first") {
    // 6 tasks in 3 batches of 2, due at 100, 200 and 300 ms with one producer; task 0 lasts 200 ms
    assertEquals(Ideal.inOrder(Fixtures.smallPlan, 1, Vector(0, 1, 2, 3, 4, 5)), 350L)
    // the last batch first: 4 and 5 wait for 300 ms, 0 and 1 for the slots they free at 350 ms
    assertEquals(Ideal.inOrder(Fixtures.smallPlan, 1, Vector(4, 5, 0, 1, 2, 3)), 550L)
    interceptMessage[IllegalArgumentException](
      "requirement failed: order must hold each of the 6 tasks once, was: Vector(0, 0, 1, 2, 3, 4)"
    )(Ideal.inOrder(Fixtures.smallPlan, 1, Vector(0, 0, 1, 2, 3, 4)))
  }

  test("in first-come-first-served order it is the ideal, on random workloads") {
    val rng = new scala.util.Random(11)
    (1 to 300).foreach { i =>
      val plan = Plan.draw(Fixtures.random(rng, i), seed = i.toLong, run = 0)
      (1 to plan.workload.producers).foreach { p =>
        assertEquals(Ideal.inOrder(plan, p, plan.arrivals(p).map(_.task)), Ideal.of(plan, p).makespan)
      }
    }
  }

  test(
    "slow-consumer, run 0: the two producers' batches fall due together, and which goes first moves the ideal"
  ) {
    val plan = Plan.draw(Workload.slowConsumer, seed = 0L, run = 0)
    val due = plan.arrivals(2)
    assertEquals(Ideal.of(plan, 2).makespan, 5765L) // producer 0's batch first at every tie
    assertEquals(Ideal.inOrder(plan, 2, due.sortBy(a => (a.at, -a.producer, a.task)).map(_.task)), 5654L)
  }

  test(
    "weir ends before the ideal on slow-consumer, never before the ideal of its own order (virtual time)"
  ) {
    val plan = Plan.draw(Workload.slowConsumer, seed = 0L, run = 0)
    Fixtures.measure(WeirApproach, plan).map { m =>
      assertEquals(m.status, Status.Ok)
      assertEquals((m.makespanMs, m.idealMs), (5654.0, 5765.0))
      assertEquals(m.ownOrderMs, Some(5654.0))
      assertEquals(m.ownOrderRatio, 1.0)
    }
  }

  /** Every approach that runs in virtual time. */
  private val virtual = Approach.all.filter(_.placement == Placement.Shared)

  test("every approach, on random workloads in virtual time: never below the ideal of its own start order") {
    val rng = new scala.util.Random(5)
    (1 to 25).toVector.traverse_ { i =>
      val plan = Plan.draw(Fixtures.random(rng, i), seed = i.toLong, run = 0)
      virtual.traverse_ { a =>
        Fixtures.measure(a, plan).map { m =>
          val what = s"${a.name} on ${plan.workload}"
          assertEquals(m.status, Status.Ok, what)
          val bound = m.ownOrderMs.getOrElse(fail(s"$what: no start order recorded"))
          assert(m.makespanMs >= bound, s"$what: makespan ${m.makespanMs} ms below its own order's $bound ms")
        }
      }
    }
  }
