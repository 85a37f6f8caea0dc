package weir.lab
package compare

import cats.syntax.all.*
import munit.CatsEffectSuite
import weir.lab.compare.approaches.*
import weir.lab.compare.scenarios.{BoundedIdeal, Plan, WorkloadFile}

import java.nio.file.Paths
import scala.concurrent.duration.*

/** Issue #22's bursty shapes (docs/lab/bursty-workloads.json) in virtual time, against the bounded ideal. */
class BurstyTargetsSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 300.seconds

  private val root = Paths.get(sys.props.getOrElse("user.dir", ".")).resolve("..").normalize
  private val workloads =
    WorkloadFile.load(root.resolve("docs/lab/bursty-workloads.json")).fold(e => fail(e), identity)

  workloads.foreach { w =>
    test(s"${w.name}: weir within 2% of the ideal with the same buffer, and no later than work-stealing") {
      val plan = Plan.draw(w, seed = 0L, run = 0)
      Vector(WeirApproach, WorkStealingApproach).traverse(a => Fixtures.measure(a, plan)).map {
        case Vector(weir, stealing) =>
          val bounded = BoundedIdeal.makespan(plan, w.producers, w.buffer).toDouble
          assertEquals(weir.status, Status.Ok)
          assert(
            weir.makespanMs <= 1.02 * bounded,
            s"weir ${weir.makespanMs} ms vs bounded ideal $bounded ms"
          )
          assert(
            weir.makespanMs <= stealing.makespanMs,
            s"weir ${weir.makespanMs} ms vs work-stealing ${stealing.makespanMs} ms"
          )
        case other => fail(s"two measurements expected, got $other")
      }
    }
  }
