package weir.lab
package compare

import cats.syntax.all.*
import munit.CatsEffectSuite
import weir.lab.compare.approaches.*
import weir.lab.compare.scenarios.{Plan, Workload}

import scala.concurrent.duration.*

/** The virtual-clock targets on the seed's three shapes (seed 0, run 0). */
class TargetsSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 120.seconds

  private def makespans(approaches: Vector[Approach], w: Workload) =
    val plan = Plan.draw(w, seed = 0L, run = 0)
    approaches.traverse(a => Fixtures.measure(a, plan).map(m => a -> m)).map(_.toMap)

  Workload.defaults.foreach { w =>
    test(s"${w.name}: weir is within 2% of the ideal") {
      makespans(Vector(WeirApproach), w).map { ms =>
        val m = ms(WeirApproach)
        assertEquals(m.status, Status.Ok)
        assert(m.ratio <= 1.02, s"weir ${m.makespanMs} ms vs ideal ${m.idealMs} ms: ratio ${m.ratio}")
      }
    }
  }

  private val seven = Vector(
    BatchApproach,
    BlockingQueueApproach,
    EffectQueueApproach,
    StreamApproach,
    PrefetchStreamApproach,
    ConcurrentProducersQueueApproach,
    ConcurrentProducersParJoinApproach
  )

  test(
    "the write-up's order: batch worst everywhere, concurrent producers best on slow-producer, ordered slower than unordered on balanced"
  ) {
    Workload.defaults.traverse(w => makespans(seven :+ UnorderedStreamApproach, w).map(w.name -> _)).map(
      _.toMap
    ).map { all =>
      all.foreach { (shape, ms) =>
        val batch = ms(BatchApproach).makespanMs
        seven.filterNot(_ == BatchApproach).foreach(a =>
          assert(ms(a).makespanMs < batch, s"$shape: ${a.name} vs batch")
        )
      }
      val slow = all("slow-producer")
      val concurrent =
        Vector(ConcurrentProducersQueueApproach, ConcurrentProducersParJoinApproach).map(slow(_).makespanMs)
      val single = seven.filter(_.producers(Workload.slowProducer) == 1).map(slow(_).makespanMs)
      assert(concurrent.max < single.min, s"slow-producer: concurrent $concurrent vs one producer $single")
      val balanced = all("balanced")
      assert(balanced(StreamApproach).makespanMs > balanced(UnorderedStreamApproach).makespanMs)
    }
  }
