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

  test(
    "bounded buffer: a burst larger than buffer and slots delays the producer's pause, and its next burst"
  ) {
    // batch 0 (tasks 0-2) is due at 10 ms, batch 1 (tasks 3-4) 1000 ms after batch 0 is all in; one slot,
    // one place: task 2 gets in only when task 0 ends (110), so batch 1 is due at 1110, not at 1010
    val w = Workload(
      "burst",
      tasks = 5,
      batch = 3,
      producers = 1,
      slots = 1,
      buffer = 1,
      produce = Delay.Fixed(10),
      consume = Delay.Fixed(100),
      burst = Some(Burst(batches = 1, pauseMs = 990))
    )
    val plan = Plan.draw(w, seed = 0L, run = 0)
    assertEquals(plan.produceMs, Vector(10L, 1000L))
    assertEquals(Ideal.of(plan, 1).makespan, 1210L)
    assertEquals(BoundedIdeal.makespan(plan, 1, buffer = 1), 1310L)
    assertEquals(BoundedIdeal.makespan(plan, 1, buffer = 2), 1210L) // task 2 waits in the buffer instead
  }

  test("bounded buffer: a buffer that holds every task gives the unbounded ideal, on random workloads") {
    val rng = new scala.util.Random(7)
    (1 to 300).foreach { i =>
      val batch = 1 + rng.nextInt(8)
      val w = Workload(
        s"random-$i",
        tasks = 1 + rng.nextInt(60),
        batch = batch,
        producers = 1 + rng.nextInt(4),
        slots = 1 + rng.nextInt(6),
        buffer = 1,
        produce = Delay.Uniform(0, 1 + rng.nextInt(50)),
        consume = Delay.Uniform(0, 1 + rng.nextInt(200)),
        burst = Option.when(rng.nextBoolean())(Burst(1 + rng.nextInt(3), rng.nextInt(300).toLong))
      )
      val plan = Plan.draw(w, seed = i.toLong, run = 0)
      (1 to 4).foreach { producers =>
        assertEquals(
          BoundedIdeal.makespan(plan, producers, buffer = w.tasks),
          Ideal.of(plan, producers).makespan,
          s"$w with $producers producers"
        )
      }
    }
  }

  test("bounded buffer, one producer: a larger buffer never ends later, down to the unbounded ideal") {
    val rng = new scala.util.Random(17)
    (1 to 300).foreach { i =>
      val plan = Plan.draw(Fixtures.random(rng, i), seed = i.toLong, run = 0)
      val byBuffer = (1 to plan.workload.tasks).map(b => BoundedIdeal.makespan(plan, 1, b))
      assert(
        byBuffer.zip(byBuffer.drop(1)).forall(_ >= _),
        s"${plan.workload}: by buffer 1, 2, ...: $byBuffer"
      )
      assertEquals(byBuffer.last, Ideal.of(plan, 1).makespan, plan.workload.toString)
    }
  }

  test(
    "bounded buffer, several producers: another order of their batches can end sooner than the unbounded ideal"
  ) {
    // first come, first served is not the optimal packing: a full buffer makes producers come in another
    // order, so neither the unbounded ideal nor a larger buffer bounds the bounded ideal from below here
    val w = Workload(
      "random-7",
      tasks = 53,
      batch = 3,
      producers = 4,
      slots = 2,
      buffer = 10,
      produce = Delay.Uniform(0, 29),
      consume = Delay.Uniform(0, 146),
      burst = Some(Burst(1, 13))
    )
    val plan = Plan.draw(w, seed = 7L, run = 0)
    assertEquals(Ideal.of(plan, 3).makespan, 2134L)
    assertEquals(BoundedIdeal.makespan(plan, 3, buffer = 1), 2119L)
  }

  test(
    "a burst: the producers' batches between two pauses; the buffer is below it on the bursty shapes only"
  ) {
    assertEquals(Workload.defaults.map(w => (w.burstTasks, w.bufferBelowBurst)), Vector.fill(3)((200, false)))
    assertEquals(Workload.quick.map(w => (w.burstTasks, w.bufferBelowBurst)), Vector.fill(3)((20, false)))
    assertEquals(Workload.balanced.copy(producers = 3).bufferBelowBurst, true) // three batches of 100 at once
    val files = Vector("compare-workloads.json", "bursty-workloads.json").flatMap(f =>
      WorkloadFile.load(root.resolve("docs/lab").resolve(f)).fold(e => fail(e), identity)
    )
    assertEquals(
      files.map(w => (w.name, w.burstTasks, w.buffer, w.bufferBelowBurst)),
      Vector(
        ("bursty-heavy-tail", 600, 200, true),
        ("exponential", 100, 100, false),
        ("bursts-over-buffer", 2400, 64, true),
        ("bursts-in-buffer", 2400, 4800, false),
        ("one-slot", 400, 8, true)
      )
    )
    // where the buffer holds a burst the bounded ideal is the unbounded one (runs 0-2 of seed 0), so the
    // table leaves it out there
    (Workload.defaults ++ Workload.quick ++ files).filterNot(_.bufferBelowBurst).foreach { w =>
      (0 to 2).foreach { run =>
        val plan = Plan.draw(w, seed = 0L, run = run)
        Vector(1, w.producers).foreach { p =>
          assertEquals(
            BoundedIdeal.makespan(plan, p, w.buffer),
            Ideal.of(plan, p).makespan,
            s"${w.name} run $run"
          )
        }
      }
    }
  }

  private val root = java.nio.file.Paths.get(sys.props.getOrElse("user.dir", ".")).resolve("..").normalize
