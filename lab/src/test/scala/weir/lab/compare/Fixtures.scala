package weir.lab
package compare

import cats.effect.IO
import weir.lab.compare.approaches.{Approach, Clock}
import weir.lab.compare.scenarios.{Burst, Ideal, Plan, Workload}

/** Small hand-made workloads with delays written out, and a way to run one approach on them in virtual time. */
object Fixtures:

  /** 6 tasks in 3 batches of 2; 2 slots; batches every 100 ms; task 0 takes 200 ms, the others 50 ms. */
  val small: Workload =
    Workload(
      "small",
      tasks = 6,
      batch = 2,
      producers = 2,
      slots = 2,
      buffer = 4,
      Delay.Fixed(100),
      Delay.Fixed(50)
    )

  val smallPlan: Plan =
    Plan(small, seed = 0L, run = 0, Vector(100L, 100L, 100L), Vector(200L, 50L, 50L, 50L, 50L, 50L))

  /** A small workload drawn from `rng`, bursty half the time; its producers never outnumber its batches. */
  def random(rng: scala.util.Random, i: Int): Workload =
    val batch = 1 + rng.nextInt(8)
    val tasks = 1 + rng.nextInt(60)
    Workload(
      s"random-$i",
      tasks = tasks,
      batch = batch,
      producers = 1 + rng.nextInt(math.min(4, (tasks + batch - 1) / batch)),
      slots = 1 + rng.nextInt(6),
      buffer = 1 + rng.nextInt(12),
      produce = Delay.Uniform(0, 1 + rng.nextInt(50)),
      consume = Delay.Uniform(0, 1 + rng.nextInt(200)),
      burst = Option.when(rng.nextBoolean())(Burst(1 + rng.nextInt(3), rng.nextInt(300).toLong))
    )

  // no JVM peaks, whose reset collects the whole heap before every run (a full GC per measure): the suites
  // check each run's outcome and times, and CompareCliSuite the peaks of the CLI's own runs
  val virtual: Compare.Settings = Compare.Settings(clock = Clock.Virtual, live = false, peaks = false)

  def measure(approach: Approach, plan: Plan, settings: Compare.Settings = virtual): IO[Measurement] =
    Compare.measureOne(settings, plan, approach, Ideal.of(plan, approach.producers(plan.workload)).makespan)
