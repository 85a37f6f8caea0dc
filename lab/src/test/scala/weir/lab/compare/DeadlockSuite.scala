package weir.lab
package compare

import cats.effect.IO
import munit.CatsEffectSuite
import weir.lab.compare.approaches.BlockingDeadlockApproach

import scala.concurrent.duration.*

/** The write-up's blocking hazard, shown safely: the run is watched from outside its pool and torn down. */
class DeadlockSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 30.seconds

  test(
    "two consumers blocking both threads of a two-thread pool on an empty queue: reported as deadlocked, no hang"
  ) {
    // under the virtual clock the runner still runs this one in real time (delays × 0.1); the first batch
    // comes after 500 ms, long after both consumers have blocked their threads in `take` even on a loaded
    // machine (with 100 ms, a consumer starved that long let the producer in: no deadlock, a flaky test)
    val plan = Fixtures.smallPlan.copy(produceMs = Vector(5000L, 100L, 100L))
    IO.monotonic.flatMap { t0 =>
      Fixtures.measure(BlockingDeadlockApproach, plan).flatMap { m =>
        IO.monotonic.map { t1 =>
          assertEquals(m.status, Status.Deadlocked)
          assert(m.consumed.forall(_ == 0L), "nothing was consumed")
          assert(t1 - t0 < 10.seconds, s"took ${t1 - t0}")
        }
      }
    }
  }
