package weir.internal

import munit.ScalaCheckSuite
import org.scalacheck.Gen
import org.scalacheck.Prop.forAll
import weir.{Disposition, TaskOutcome}

class RecentFailuresSuite extends ScalaCheckSuite:
  private val boom = new RuntimeException("boom")
  private def failure(i: Int): TaskOutcome.Failed[Int, Nothing] =
    TaskOutcome.Failed(i, boom, Disposition.Skipped, 1)

  property("keeps the last `capacity` failures added, oldest first, whatever the count") {
    forAll(Gen.frequency(4 -> Gen.choose(0, 20), 1 -> Gen.const(Int.MaxValue)), Gen.choose(0, 100)) {
      (capacity, added) =>
        val ring = new RecentFailures[Int](capacity)
        (0 until added).foreach(i => ring.add(failure(i)))
        assertEquals(ring.toVector.map(_.task), (0 until added).takeRight(capacity).toVector)
    }
  }

  test("failures added from many threads at once: the last `capacity` of them, each once") {
    val ring = new RecentFailures[Int](64)
    val threads = (0 until 8).map(t =>
      new Thread(() => (0 until 10000).foreach(i => ring.add(failure(t * 10000 + i))))
    )
    threads.foreach(_.start())
    threads.foreach(_.join())
    val kept = ring.toVector.map(_.task)
    assertEquals(kept.size, 64)
    assertEquals(kept.distinct.size, 64)
    // each thread adds its own tasks in increasing order, so they stay in that order among the kept
    kept.groupBy(_ / 10000).values.foreach(own => assertEquals(own, own.sorted))
    // the newest failure of all is the last one some thread added
    assertEquals(kept.last % 10000, 9999, kept.toString)
  }
