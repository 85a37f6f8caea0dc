package weir.kafka.internal

import munit.ScalaCheckSuite
import org.apache.kafka.common.TopicPartition
import org.scalacheck.{Gen, Prop}

class PartitionStateSuite extends ScalaCheckSuite:

  private val tp = new TopicPartition("t", 0)

  property("the committable offset is always the first record not finished, and only the window is held") {
    val cases =
      for
        n <- Gen.choose(1, 40)
        gaps <- Gen.listOfN(n, Gen.choose(1L, 3L)) // offsets need not be contiguous (compaction, markers)
        seed <- Gen.long
        shuffled = new scala.util.Random(seed).shuffle((0 until n).toVector)
        counts <- Gen.listOfN(n, Gen.frequency(9 -> true, 1 -> false))
      yield (gaps.scanLeft(100L)(_ + _).tail.toVector, shuffled, counts.toVector)
    Prop.forAllNoShrink(cases) { case (offsets, finishOrder, counts) =>
      val counters = new Counters
      val state = new PartitionState(tp, counters)
      assertEquals(state.committable, None)
      val entries = offsets.map(state.receive)
      entries.foreach(e => assertEquals(state.tryStart(e), None))
      val finished = Array.fill(offsets.size)(false)
      finishOrder.foreach { i =>
        state.finish(entries(i), counts(i))
        finished(i) = counts(i)
        val firstOpen = finished.indexWhere(!_)
        val expected = if firstOpen < 0 then offsets.last + 1 else offsets(firstOpen)
        assertEquals(state.committable, Some(expected))
        val window = if firstOpen < 0 then 0 else offsets.size - firstOpen
        assertEquals(counters.held.get, window)
        assertEquals(state.size, window)
      }
    }
  }

  test("after a revoke, an unstarted record refuses and a started one is waited for") {
    val counters = new Counters
    val state = new PartitionState(tp, counters)
    val started = state.receive(0L)
    val unstarted = state.receive(1L)
    assertEquals(state.tryStart(started), None)
    state.revoke()
    assert(state.tryStart(unstarted).exists(_.contains("revoked")))
    // the started record is still running: the wait ends at its deadline, not idle
    assert(!state.awaitIdle(System.nanoTime() + 1000000L))
    assertEquals(state.interruptRunning("partition revoked"), 1)
    assertEquals(started.interruption.requested, Some("partition revoked"))
    state.finish(started, counts = false)
    assert(state.awaitIdle(System.nanoTime()))
    assertEquals(state.committable, Some(0L))
    state.release()
    assertEquals(counters.held.get, 0)
    // a released partition's late outcomes change nothing
    state.finish(unstarted, counts = false)
    assertEquals(counters.held.get, 0)
  }

  test(
    "a revoke waits for a record in an attempt, not for one between attempts, whose next attempt refuses"
  ) {
    val state = new PartitionState(tp, new Counters)
    val inBackoff = state.receive(0L)
    assertEquals(state.tryStart(inBackoff), None)
    state.attemptEnded(inBackoff) // its attempt failed: it waits for a retry
    state.revoke()
    assert(state.awaitIdle(System.nanoTime()), "a record between attempts held the revoke")
    assertEquals(state.interruptRunning("partition revoked"), 0)
    // its outcome is still awaited until the deadline, and its retry refuses
    assert(!state.awaitOutcomes(System.nanoTime() + 1000000L))
    assert(state.tryStart(inBackoff).exists(_.contains("revoked")))
    state.finish(inBackoff, counts = false)
    assert(state.awaitOutcomes(System.nanoTime()))
    assertEquals(state.committable, Some(0L))
  }

  test("a record being dead-lettered holds a revoke; after the revoke none starts a dead-letter write") {
    val state = new PartitionState(tp, new Counters)
    val writing = state.receive(0L)
    val late = state.receive(1L)
    List(writing, late).foreach(e => assertEquals(state.tryStart(e), None))
    List(writing, late).foreach(state.attemptEnded)
    assert(state.deadLettering(writing))
    state.revoke()
    assert(!state.awaitIdle(System.nanoTime() + 1000000L), "the revoke did not wait for the write")
    assert(!state.deadLettering(late), "a revoked record started its dead-letter write")
    state.finish(writing, counts = true)
    assert(state.awaitIdle(System.nanoTime()))
  }

  test(
    "records an earlier reader finished are received finished, and the commit names those finished above it"
  ) {
    val counters = new Counters
    val state = new PartitionState(tp, counters)
    // the last commit was at 3, its metadata naming 4..9 and 12 as finished
    state.skipping(CommitMetadata.decode(3L, "w1:1,6,2,1"))
    val entries = (3L to 13L).map(state.receive)
    assertEquals(entries.filter(_.skipped).map(_.offset), Vector(4L, 5L, 6L, 7L, 8L, 9L, 12L))
    assertEquals(state.commitPoint(4096), Some((3L, "w1:1,6,2,1")))
    entries.filter(e => !e.skipped && e.offset != 3L).foreach { e =>
      assertEquals(state.tryStart(e), None)
      state.finish(e, counts = true)
    }
    assertEquals(state.commitPoint(4096), Some((3L, "w1:1,a")))
    assertEquals(state.commitPoint(0), Some((3L, "")))
    state.finish(entries.head, counts = true)
    assertEquals(state.commitPoint(4096), Some((14L, "")))
    assertEquals(counters.held.get, 0)
  }
