package weir.kafka.internal

import munit.ScalaCheckSuite
import org.apache.kafka.common.TopicPartition
import org.scalacheck.{Gen, Prop}
import weir.{Disposition, TaskInterrupted, TaskOutcome, Tracked}

import java.util.concurrent.{CompletableFuture, CyclicBarrier, TimeUnit}

class PartitionStateSuite extends ScalaCheckSuite:

  private val tp = new TopicPartition("t", 0)

  // the outcomes a record's life ends with: it ran (succeeded, or failed), or it was interrupted
  private val ran = TaskOutcome.Succeeded((), (), 1)
  private val interrupted = TaskOutcome.Failed((), new TaskInterrupted("revoked"), Disposition.Interrupted, 1)

  // the two threads of a race test meet here each round; a thread that died fails the other's wait instead of
  // hanging the suite
  private def meet(barrier: CyclicBarrier): Unit = barrier.await(10, TimeUnit.SECONDS): Unit

  /** What the engine does at the end of an attempt that was not interrupted: its registration undone. */
  private def attemptEnded(state: PartitionState, e: Entry): Unit =
    e.life.onInterrupt(_ => ())()
    state.attemptEnded(e)

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
        state.finish(entries(i), ran, counts(i))
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
    assertEquals(started.life.state.refusal, Some("partition revoked"))
    state.finish(started, interrupted, counts = false)
    assert(state.awaitIdle(System.nanoTime()))
    assertEquals(state.committable, Some(0L))
    state.release()
    assertEquals(counters.held.get, 0)
    // a released partition's late outcomes change nothing
    state.finish(unstarted, interrupted, counts = false)
    assertEquals(counters.held.get, 0)
  }

  test(
    "a revoke waits for a record in an attempt, not for one between attempts, whose next attempt refuses"
  ) {
    val state = new PartitionState(tp, new Counters)
    val inBackoff = state.receive(0L)
    assertEquals(state.tryStart(inBackoff), None)
    attemptEnded(state, inBackoff) // its attempt failed: it waits for a retry
    state.revoke()
    assert(state.awaitIdle(System.nanoTime()), "a record between attempts held the revoke")
    assertEquals(state.interruptRunning("partition revoked"), 0)
    // its outcome is still awaited until the deadline, and its retry refuses
    assert(!state.awaitOutcomes(System.nanoTime() + 1000000L))
    assert(state.tryStart(inBackoff).exists(_.contains("revoked")))
    state.finish(inBackoff, interrupted, counts = false)
    assert(state.awaitOutcomes(System.nanoTime()))
    assertEquals(state.committable, Some(0L))
  }

  test("a record being dead-lettered holds a revoke; after the revoke none starts a dead-letter write") {
    val state = new PartitionState(tp, new Counters)
    val writing = state.receive(0L)
    val late = state.receive(1L)
    List(writing, late).foreach(e => assertEquals(state.tryStart(e), None))
    List(writing, late).foreach(attemptEnded(state, _))
    assert(state.deadLettering(writing))
    state.revoke()
    assert(!state.awaitIdle(System.nanoTime() + 1000000L), "the revoke did not wait for the write")
    assert(!state.deadLettering(late), "a revoked record started its dead-letter write")
    state.finish(writing, ran, counts = true)
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
      state.finish(e, ran, counts = true)
    }
    assertEquals(state.commitPoint(4096), Some((3L, "w1:1,a")))
    assertEquals(state.commitPoint(0), Some((3L, "")))
    state.finish(entries.head, ran, counts = true)
    assertEquals(state.commitPoint(4096), Some((14L, "")))
    assertEquals(counters.held.get, 0)
  }

  test(
    "a start that meets a revoke takes its marks back: the revoke neither waits for it nor awaits its outcome"
  ) {
    val state = new PartitionState(tp, new Counters)
    val e = state.receive(0L)
    state.revoke()
    assert(state.tryStart(e).exists(_.contains("revoked")))
    assert(state.awaitIdle(System.nanoTime()))
    assert(state.awaitOutcomes(System.nanoTime()))
    assertEquals(state.interruptRunning("partition revoked"), 0)
    assertEquals(
      e.life.state,
      Tracked.State.Stopping(
        s"partition $tp was revoked",
        started = false,
        refused = true,
        interrupted = false
      )
    )
  }

  // a start and a revoke that race meet in at least one of them: a start that was let through is seen busy
  // by the revoke, which checks for busy records right after it revoked; which interleavings occur is up to
  // the two threads, so this checks the promise under races rather than forcing the narrowest one
  test("a start racing a revoke either refuses or is waited for") {
    val rounds = 2000
    val barrier = new CyclicBarrier(2)
    val states = Vector.fill(rounds)(new PartitionState(tp, new Counters))
    val entries = states.map(_.receive(0L))
    val idleSeen = new Array[Boolean](rounds)
    val revoker = new Thread(() =>
      (0 until rounds).foreach { i =>
        meet(barrier)
        states(i).revoke()
        idleSeen(i) = states(i).awaitIdle(System.nanoTime())
        meet(barrier)
      }
    )
    revoker.setDaemon(true)
    revoker.start()
    (0 until rounds).foreach { i =>
      meet(barrier)
      val refusal = states(i).tryStart(entries(i))
      meet(barrier)
      assert(
        refusal.nonEmpty || !idleSeen(i),
        s"round $i: a record started, and the revoke did not see it busy"
      )
      if refusal.nonEmpty then
        assert(states(i).awaitIdle(System.nanoTime()), s"round $i: a refused start stayed busy")
    }
    revoker.join()
  }

  test("a record the revoke's walk has not reached yet refuses to start once the revoke began") {
    val state = new PartitionState(tp, new Counters)
    val refused = state.receive(0L)
    // outside the window, so that the revoke's walk never refuses it itself: as a later record is before the
    // walk reaches it
    val notReached = new Entry(1L, state)
    state.revoke()
    assert(state.tryStart(refused).nonEmpty)
    assertEquals(notReached.life.state.refusal, None)
    assert(state.tryStart(notReached).exists(_.contains("revoked")))
    assert(!state.deadLettering(new Entry(2L, state)))
  }

  // The engine tries a key's next record only once the one before it has an outcome, a refusal included: a
  // revoke refusing the window's records one after the other must not let a later record start after an
  // earlier one was refused, or the next owner runs the earlier one after it (the key's order broken).
  test("once a revoke refused a record, no later record of the partition starts") {
    val rounds = 2000
    val size = 200
    val barrier = new CyclicBarrier(2)
    val states = Vector.fill(rounds)(new PartitionState(tp, new Counters))
    val entries = states.map(s => Vector.tabulate(size)(i => s.receive(i.toLong)))
    val revoker = new Thread(() =>
      (0 until rounds).foreach { i =>
        meet(barrier)
        // lets the records' walk get under way first, by a varying amount
        var spin = i % 64
        while spin > 0 do
          Thread.onSpinWait()
          spin -= 1
        states(i).revoke()
        meet(barrier)
      }
    )
    revoker.setDaemon(true)
    revoker.start()
    val broken = (0 until rounds).flatMap { i =>
      meet(barrier)
      // one key's records, each tried once the one before it ran or was refused
      val started = entries(i).map { e =>
        val refused = states(i).tryStart(e).nonEmpty
        if !refused then
          attemptEnded(states(i), e)
          states(i).finish(e, ran, counts = true)
        !refused
      }
      meet(barrier)
      val firstRefused = started.indexOf(false)
      Option.when(firstRefused >= 0 && started.lastIndexOf(true) > firstRefused)(
        s"round $i: record ${started.lastIndexOf(true)} started after record $firstRefused was refused"
      )
    }
    revoker.join()
    assertEquals(broken.take(3), Vector.empty, s"${broken.size} of $rounds rounds")
  }

  /** Runs `wait` on a thread of its own once a revoke waits on `state`, then `change`: the wait's answer. */
  private def wokenBy(state: PartitionState)(wait: => Boolean)(change: => Unit): Boolean =
    val result = new CompletableFuture[Boolean]
    val waiter = new Thread(() => result.complete(wait): Unit)
    waiter.setDaemon(true)
    waiter.start()
    val deadline = System.nanoTime() + 10L * 1000 * 1000 * 1000
    while !state.waiting && System.nanoTime() < deadline do Thread.onSpinWait()
    assert(state.waiting, "the waiter did not start waiting")
    change
    // the wait's own deadline is a minute away: only a notification ends it within these 10 s
    val woken = result.get(10, TimeUnit.SECONDS)
    waiter.join()
    woken

  test("a revoke waiting for busy records is woken by the end of their attempt") {
    val state = new PartitionState(tp, new Counters)
    val e = state.receive(0L)
    assertEquals(state.tryStart(e), None)
    state.revoke()
    assert(
      wokenBy(state)(state.awaitIdle(System.nanoTime() + 60L * 1000 * 1000 * 1000))(attemptEnded(state, e))
    )
  }

  test("a revoke waiting for outcomes is woken by a chunk of outcomes") {
    val state = new PartitionState(tp, new Counters)
    val es = (0L until 3L).map(state.receive)
    es.foreach(e => assertEquals(state.tryStart(e), None))
    es.foreach(attemptEnded(state, _))
    state.revoke()
    assert(wokenBy(state)(state.awaitOutcomes(System.nanoTime() + 60L * 1000 * 1000 * 1000))(
      PartitionState.finishAll(es.map(e => (e, ran, true)))
    ))
    assertEquals(state.committable, Some(3L))
  }

  property("a chunk of outcomes of several partitions finishes each as one by one would") {
    val cases =
      for
        n <- Gen.choose(1, 60)
        partitions <- Gen.listOfN(n, Gen.choose(0, 2))
        seed <- Gen.long
        chunk <- Gen.choose(1, 20)
      yield (partitions.toVector, new scala.util.Random(seed).shuffle((0 until n).toVector), chunk)
    Prop.forAllNoShrink(cases) { case (partitionOf, order, chunk) =>
      def run(finishing: Vector[Entry] => Unit): (Vector[Option[Long]], Int) =
        val counters = new Counters
        val states = Vector.tabulate(3)(p => new PartitionState(new TopicPartition("t", p), counters))
        val entries = partitionOf.zipWithIndex.map((p, i) => states(p).receive(i.toLong))
        entries.foreach(e => assertEquals(e.state.tryStart(e), None))
        order.map(entries).grouped(chunk).foreach(finishing)
        (states.map(_.committable), counters.held.get)
      val oneByOne = run(_.foreach(e => e.state.finish(e, ran, counts = e.offset % 7 != 3)))
      val chunked = run(es => PartitionState.finishAll(es.map(e => (e, ran, e.offset % 7 != 3))))
      assertEquals(chunked, oneByOne)
    }
  }
