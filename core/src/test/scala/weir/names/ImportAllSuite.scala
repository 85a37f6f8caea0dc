package weir.names

import cats.*
import cats.effect.*
import fs2.*
import munit.CatsEffectSuite
import weir.*

/**
 * `import weir.*` beside the wildcard imports a weir user writes shadows nothing: `Ordering` is still
 * Scala's and `Outcome` Cats Effect's. Were weir to define either name again, this file would not compile
 * (an ambiguous reference between two wildcard imports, or Scala's `Ordering` shadowed).
 */
class ImportAllSuite extends CatsEffectSuite:

  test("after import weir.*, Ordering is scala.math.Ordering and Outcome is Cats Effect's") {
    val descending: Ordering[Int] = Ordering.Int.reverse
    assertEquals(List(1, 3, 2).sorted(using descending), List(3, 2, 1))
    IO.pure(21).start.flatMap(_.join).map { (outcome: Outcome[IO, Throwable, Int]) =>
      assert(outcome.isSuccess)
    }
  }

  test("weir's own names are reachable beside them") {
    val tasks = Stream.range(0, 10).covary[IO]
    Pipeline(
      tasks
    ).process(i => IO.pure(i * 2)).withOrder(TaskOrder.inputOrder).outcomes.compile.toVector.map {
      outcomes =>
        assertEquals(
          outcomes.collect { case TaskOutcome.Succeeded(_, v, _) => v },
          Vector.tabulate(10)(_ * 2)
        )
    }
  }
