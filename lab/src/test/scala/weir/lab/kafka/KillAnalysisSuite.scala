package weir.lab.kafka

import munit.FunSuite
import weir.lab.kafka.KillAnalysis.{Commits, Run}

class KillAnalysisSuite extends FunSuite:

  // partition 0 holds offsets 0..3: keys a, b, a, b
  private val ends = Map(0 -> 4L)
  private def run(consumer: Int, offset: Long, key: String, start: Long, finish: Long) =
    Run(consumer, 0, offset, key, start, finish)
  private val clean = Vector(
    run(0, 0, "a", 10, 20),
    run(0, 1, "b", 10, 25),
    run(0, 2, "a", 21, 30),
    run(0, 3, "b", 26, 40)
  )
  private val committed = Vector(Commits(100, 110, Map(0 -> 4L)))

  test("a clean run: nothing lost, no violation, no duplicate, lags from the first finish to the sample") {
    val r = KillAnalysis.analyse(ends, clean, Set.empty, Map.empty, committed)
    assertEquals(
      (r.records, r.lost, r.duplicates, r.orderViolations, r.unexplained),
      (4L, 0L, 0L, Vector(), Vector())
    )
    assertEquals(r.committedEarly, 0L)
    assertEquals(
      r.commitLagMillis.sorted,
      Vector(110 - 40, 110 - 30, 110 - 25, 110 - 20).map(_ / 1000.0).sorted
    )
  }

  test("a record no report holds is lost") {
    assertEquals(KillAnalysis.analyse(ends, clean.take(3), Set.empty, Map.empty, committed).lost, 1L)
  }

  test("a key's record started before an earlier one of its key finished is a violation") {
    val early = clean.updated(2, run(0, 2, "a", 15, 30))
    val r = KillAnalysis.analyse(ends, early, Set.empty, Map.empty, committed)
    assert(r.orderViolations.nonEmpty, r)
  }

  test("a record run only after a later one of its key, elsewhere, is named with both consumers") {
    // offset 0 first ran to its end on consumer 1, after offset 2 of its key had run on consumer 0
    val late = clean.updated(0, run(1, 0, "a", 50, 60))
    val r = KillAnalysis.analyse(ends, late, Set.empty, Map.empty, committed)
    assertEquals(
      r.orderViolations,
      Vector(
        "key a of partition 0: offset 2 started on consumer 0 at 21 µs, before its key's offset 0 had " +
          "finished (first at 60 µs, on consumer 1)"
      )
    )
  }

  test("a key running on two consumers at once is a violation, even on a record run before") {
    val twice = clean :+ run(1, 0, "a", 22, 28)
    val r = KillAnalysis.analyse(ends, twice, Set(0), Map.empty, committed)
    assert(r.orderViolations.exists(_.contains("while offset")), r)
  }

  test("a repeat is explained by a kill, by a move to another consumer or a revoke, else it is named") {
    val again = clean :+ run(0, 3, "b", 50, 60)
    assertEquals(KillAnalysis.analyse(ends, again, Set(0), Map.empty, committed).afterKill, 1L)
    assertEquals(
      KillAnalysis.analyse(ends, again, Set.empty, Map(0 -> Vector(45L)), committed).afterRevoke,
      1L
    )
    val moved = clean :+ run(1, 3, "b", 50, 60)
    assertEquals(KillAnalysis.analyse(ends, moved, Set.empty, Map.empty, committed).afterRevoke, 1L)
    val r = KillAnalysis.analyse(ends, again, Set.empty, Map(0 -> Vector(35L)), committed)
    assertEquals((r.duplicates, r.unexplained.size), (1L, 1))
  }

  test("an offset committed before any run of its record finished is counted") {
    val r = KillAnalysis.analyse(ends, clean, Set.empty, Map.empty, Vector(Commits(22, 23, Map(0 -> 4L))))
    assertEquals(r.committedEarly, 3L) // offsets 1, 2 and 3 finish after the sample's read was over
  }

  test("a sample whose read was under way when a record finished does not count it early") {
    // the read of the committed offsets ran from 24 to 26 µs; offset 1 finished at 25, in between: the commit
    // it saw may have come after that finish. Offsets 2 and 3 finish after the read was over.
    val r = KillAnalysis.analyse(ends, clean, Set.empty, Map.empty, Vector(Commits(24, 26, Map(0 -> 4L))))
    assertEquals(r.committedEarly, 2L)
  }
