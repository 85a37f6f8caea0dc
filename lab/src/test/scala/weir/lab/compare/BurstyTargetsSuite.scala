package weir.lab
package compare

import cats.syntax.all.*
import munit.CatsEffectSuite
import weir.lab.compare.approaches.*
import weir.lab.Stats
import weir.lab.compare.scenarios.{BoundedIdeal, Plan, WorkloadFile}

import java.nio.file.Paths
import scala.concurrent.duration.*

/**
 * Issue #22's bursty shapes (docs/lab/bursty-workloads.json) in virtual time, against the bounded ideal, over
 * twenty draws of the delays (runs 0–19 of seed 0, as `./weir compare --runs 20` draws them).
 *
 * One draw is not enough to judge a schedule. Eight producers' batches fall due in the same instant, and the
 * ideal lets them in by producer number where weir and the pool let them in in the order their fibers run;
 * both are first come, first served, but a long task placed a few hundred tasks later in that instant ends
 * the run up to about 2% later. So each draw is held to 2.5%, the lab's own draw (run 0) to the 2%,
 * and the comparison with the work-stealing pool is made on the medians.
 */
class BurstyTargetsSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 300.seconds

  private val root = Paths.get(sys.props.getOrElse("user.dir", ".")).resolve("..").normalize
  private val workloads =
    WorkloadFile.load(root.resolve("docs/lab/bursty-workloads.json")).fold(e => fail(e), identity)
  private val draws = 20

  /** weir's and the pool's makespans on one draw, as ratios to the bounded ideal. */
  private final case class Draw(run: Int, weir: Double, stealing: Double)

  workloads.foreach { w =>
    test(
      s"${w.name}: weir follows the ideal with the same buffer, and is level with work-stealing, over $draws draws"
    ) {
      (0 until draws).toVector
        .traverse { run =>
          val plan = Plan.draw(w, seed = 0L, run = run)
          val bounded = BoundedIdeal.makespan(plan, w.producers, w.buffer).toDouble
          Vector(WeirApproach, WorkStealingApproach).traverse(a => Fixtures.measure(a, plan)).map {
            case Vector(weir, stealing) =>
              assertEquals(weir.status, Status.Ok, s"run $run")
              Draw(run, weir.makespanMs / bounded, stealing.makespanMs / bounded)
            case other => fail(s"two measurements expected, got $other")
          }
        }
        .map { ds =>
          val first = ds.head
          assert(first.weir <= 1.02, s"run 0: weir at ${first.weir} of the bounded ideal")
          val far = ds.filter(_.weir > 1.025)
          assert(far.isEmpty, s"draws where weir is more than 2.5% behind the bounded ideal: $far")
          val (weir, stealing) = (Stats.of(ds.map(_.weir)).median, Stats.of(ds.map(_.stealing)).median)
          assert(
            weir <= stealing + 0.005,
            s"medians: weir $weir, work-stealing $stealing of the bounded ideal"
          )
        }
    }
  }
