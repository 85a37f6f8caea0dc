package weir.lab
package compare

import cats.syntax.all.*
import munit.CatsEffectSuite
import weir.lab.compare.approaches.*
import weir.lab.compare.scenarios.{Ideal, Plan, Workload}

import scala.concurrent.duration.*

/**
 * Every approach in virtual time, where any overhead or lost parallelism shows exactly.
 *
 * The hand-made workload ([[Fixtures.smallPlan]]): batches of 2 tasks after 100 ms each (one producer: at
 * 100, 200, 300 ms; two producers: batch 0 from producer 0 at 100, batches 1 and 2 from producer 1 at 100
 * and 200); 2 slots; task 0 takes 200 ms, every other task 50 ms. The ideal makespan is 350 ms with one
 * producer and with two.
 */
class ApproachScheduleSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 60.seconds

  /** Expected makespan (ms) per approach, each with the schedule that produces it. */
  private val expected: Vector[(Approach, Double)] = Vector(
    // batch 0 until 300 (task 0), batch 1 produced at 400, done 450; batch 2 produced at 550, done 600
    BatchApproach -> 600.0,
    // ordered parEvalMap(2): at most 2 tasks past the last emitted one, so tasks 2 and 3 (available at 200)
    // wait for task 0 to be emitted at 300: 300–350; tasks 4 and 5 350–400
    BlockingQueueApproach -> 400.0,
    EffectQueueApproach -> 400.0,
    // the same, and without prefetch batch 2 is only pulled when task 3 starts (300): ready at 400, done 450
    StreamApproach -> 450.0,
    // unordered: task 2 starts at 200 (slot of task 1), task 3 at 250; batch 2 is pulled when task 3 gets its
    // slot (250), ready at 350, both done at 400
    UnorderedStreamApproach -> 400.0,
    // prefetch: batch 2 is ready at 300, so tasks 4 and 5 start as soon as 2 and 3 end (350): 400
    PrefetchStreamApproach -> 400.0,
    // two producers, ordered window of 2: producer 1's tasks 2, 3 go first (100–150), then 0 (150–350) and
    // 1 (150–200); tasks 4, 5 (available at 200) wait for task 0 to be emitted: 350–400
    ConcurrentProducersQueueApproach -> 400.0,
    ConcurrentProducersParJoinApproach -> 400.0,
    // no window: 2, 3 at 100–150, 0 at 150–350, 1 at 150–200, 4 at 200–250, 5 at 250–300: the ideal
    WorkStealingApproach -> 350.0,
    WeirApproach -> 350.0
  )

  test(
    "a wider ordered window lets the ordered approaches start tasks behind a slow one (--ordered-window)"
  ) {
    // window 3: task 2 starts at 200 beside task 0, task 3 waits until 0 is emitted (300): 300–350, then
    // 4 at 300–350 and 5 at 350–400. Window 4: task 3 starts at 250 when task 2 ends, 4 and 5 at 300: the ideal
    def at(window: Int) =
      Fixtures.measure(
        EffectQueueApproach,
        Fixtures.smallPlan,
        Fixtures.virtual.copy(orderedWindow = Some(window))
      )
    for
      three <- at(3)
      four <- at(4)
    yield
      assertEquals((three.status, three.makespanMs, three.peakInFlight), (Status.Ok, 400.0, 2))
      assertEquals((four.status, four.makespanMs, four.peakInFlight), (Status.Ok, 350.0, 2))
  }

  test("the hand-made workload's ideal is 350 ms with one producer and with two") {
    assertEquals(Ideal.of(Fixtures.smallPlan, 1).makespan, 350L)
    assertEquals(Ideal.of(Fixtures.smallPlan, 2).makespan, 350L)
  }

  expected.foreach { (approach, ms) =>
    test(s"${approach.name}: makespan on the hand-made workload is exactly $ms ms") {
      Fixtures.measure(approach, Fixtures.smallPlan).map { m =>
        assertEquals(m.status, Status.Ok)
        assertEquals(m.makespanMs, ms)
      }
    }
  }

  test("every approach consumes every task exactly once and never runs more tasks at once than its slots") {
    // 3 slots and random delays: a run that lost, repeated or over-ran a task is reported as failed
    val w = Workload(
      "random",
      tasks = 60,
      batch = 7,
      producers = 3,
      slots = 3,
      buffer = 5,
      Delay.Uniform(0, 40),
      Delay.Uniform(1, 90)
    )
    (0 until 3).toList.traverse_ { run =>
      val plan = Plan.draw(w, seed = 7L, run)
      Approach.all.filter(_.placement == Placement.Shared).traverse_ { a =>
        Fixtures.measure(a, plan).map { m =>
          assertEquals(m.status, Status.Ok, s"${a.name}, run $run")
          assert(m.peakInFlight <= w.slots, s"${a.name}: ${m.peakInFlight} in flight")
          assertEquals(m.consumed.size, w.tasks)
        }
      }
    }
  }

  test("a run is deterministic in virtual time: the same plan gives the same makespan and timeline") {
    val plan = Plan.draw(Workload.quick(1), seed = 3L, run = 0)
    (Fixtures.measure(WeirApproach, plan), Fixtures.measure(WeirApproach, plan)).mapN { (a, b) =>
      assertEquals(a.makespanMs, b.makespanMs)
      assertEquals(a.consumed, b.consumed)
    }
  }
