package weir.kafka.internal

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

class CommitMetadataSuite extends ScalaCheckSuite:

  private def offsets(ranges: List[(Long, Long)]): Set[Long] = ranges.flatMap((a, b) => a until b).toSet

  test("runs of finished offsets are written as alternating lengths from the committed offset") {
    assertEquals(CommitMetadata.encode(10L, Iterator(13L, 14L), 4096), "w1:3,2")
    assertEquals(CommitMetadata.encode(3L, Iterator(4L, 5L, 6L, 7L, 8L, 9L), 4096), "w1:1,6")
    assertEquals(CommitMetadata.encode(0L, Iterator(2L, 5L, 6L), 4096), "w1:2,1,2,2")
    assertEquals(CommitMetadata.encode(0L, Iterator.empty, 4096), "")
    assertEquals(CommitMetadata.decode(10L, "w1:3,2"), List((13L, 15L)))
    assertEquals(CommitMetadata.decode(0L, "w1:2,1,2,2"), List((2L, 3L), (5L, 7L)))
  }

  test("metadata of another format, or damaged, names nothing") {
    List(null, "", "some other client's", "w1:", "w1:3", "w1:3,!", "w1:-1,2").foreach(m =>
      assertEquals(CommitMetadata.decode(5L, m), Nil, s"'$m'")
    )
  }

  property("what is decoded is exactly what was encoded, or a prefix of it cut to the bound") {
    val cases =
      for
        committed <- Gen.choose(0L, 1000000L)
        steps <- Gen.listOf(Gen.frequency(3 -> Gen.const(1L), 1 -> Gen.choose(2L, 5000L)))
        bound <- Gen.oneOf(0, 8, 20, 64, 4096)
      yield (committed, steps.scanLeft(committed)(_ + _).tail, bound)
    Prop.forAllNoShrink(cases) { case (committed, finished, bound) =>
      val text = CommitMetadata.encode(committed, finished.iterator, bound)
      assert(text.length <= bound, s"${text.length} bytes over the bound $bound")
      val named = offsets(CommitMetadata.decode(committed, text))
      assert(named.subsetOf(finished.toSet), s"names an offset that did not finish: ${named -- finished}")
      // the cut keeps the lowest offsets: what it names is a prefix of the finished ones
      assertEquals(named.toList.sorted, finished.take(named.size))
      if bound == 4096 && finished.size <= 100 then assertEquals(named, finished.toSet)
    }
  }

  test("whatever the gaps, the metadata stays within its bound") {
    // every other offset finished: the worst case, one pair of runs per finished record
    val finished = Iterator.iterate(1L)(_ + 2).take(100000)
    val text = CommitMetadata.encode(0L, finished, 4096)
    assert(text.length <= 4096 && text.length > 4000, s"${text.length} bytes")
    assertEquals(CommitMetadata.decode(0L, text).head, (1L, 2L))
  }
