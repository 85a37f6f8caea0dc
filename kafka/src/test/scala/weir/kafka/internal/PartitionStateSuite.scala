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
