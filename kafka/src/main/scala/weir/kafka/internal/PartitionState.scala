package weir.kafka.internal

import org.apache.kafka.common.TopicPartition
import weir.{TaskOutcome, Tracked}

import scala.collection.mutable

/**
 * One record of a partition, from the moment the poller received it until it leaves the partition's
 * window (it is in the finished prefix, or the partition was given up). Its life (started, in an attempt,
 * between attempts, refused, interrupted, its outcome) is its [[weir.Tracked]] `life`, which the engine, the
 * poller and the outcome reader move; `finished` (whether its outcome needs no re-run) is the window's, and
 * is written under its partition's lock with the outcome.
 */
private[kafka] final class Entry(val offset: Long, val state: PartitionState):
  val life = new Tracked
  private[internal] var finished = false
  // interrupted in an attempt (or about to start one) by `interruptRunning`: busy until its outcome, since
  // its handler ends only once its cancellation has run
  private[internal] var stopping = false
  // finished by an earlier reader, as the last commit's metadata says: never handed to the pipeline
  private[kafka] var skipped = false

  override def toString: String = s"Entry(${state.partition}@$offset, ${life.state})"

/**
 * The window of one assigned partition: its records in offset order, from the first that has not finished
 * to the last received. The committable offset is the first unfinished record's (or, when every received
 * record has finished, the one after the last received): only the contiguous finished prefix is ever
 * committed, so a restart re-reads from the first record that may not have run, and never skips one; the
 * records finished above it are described in the commit's metadata ([[CommitMetadata]]), so that the
 * next reader skips them.
 *
 * Memory: one entry per record received and not yet in the finished prefix, so the window holds at most
 * the records in flight plus those finished above a slower one; the poller bounds their sum
 * ([[Counters.held]]), whatever the number of keys or partitions.
 *
 * A record's life is its [[weir.Tracked]] item's: received (handed on) → started (the engine's start, or its
 * dead-letter write, was granted) and busy until its attempt ends or its outcome is known → between attempts
 * (a retry's backoff, or while its outcome is recorded) → its outcome, which ends it, finished or not. A
 * revoke first marks the partition revoked, which every later start reads, then refuses every record of the
 * window, each by one compare-and-set that a start racing it meets: a record that had not started never
 * starts here, and one that had is waited for while it is busy (a record between attempts refuses its next
 * start, so it never runs again here). No record starts after an earlier one of the partition was refused.
 *
 * Concurrency: workers (starts, attempt ends), the outcome reader (outcomes, a chunk at a time) and the
 * poller (receipts, revokes, waits, commits) call these methods concurrently. The window (`entries`, each
 * entry's `finished`, `skips`) is guarded by this state's lock, taken by the poller and once per chunk by
 * the reader; a record's life is lock-free. A waiter (the revoke, on the poller thread) counts itself in
 * `waiters` under the lock before it reads the lives it waits on, and a change it waits for (an attempt's
 * end, a start refused) is made in the record's life before it reads `waiters`, and notifies under the
 * lock: either the waiter sees the change, or the change sees the waiter; and since the waiter holds the
 * lock from its check to its `wait`, the notification cannot fall between the two. With no waiter, as
 * outside a revoke, an attempt's end costs one volatile read here.
 *
 * Invariant: `entries` is in increasing offset order, and its head is not both ended and finished. A state
 * that was `released` (the partition was revoked and committed, or lost) ignores every later outcome: its
 * records belong to another consumer now.
 */
private[kafka] final class PartitionState(val partition: TopicPartition, counters: Counters):
  private val entries = mutable.ArrayDeque.empty[Entry]
  private var nextOffset = -1L
  @volatile private var waiters = 0
  // set (under the lock) before a revoke refuses the window's records one by one, and read by every start: a
  // key's next record is tried only once the one before it was refused or ran, so a start that follows a
  // refusal sees it and refuses too, whether or not the revoke's walk has reached its record yet; without it,
  // a later record could run here while an earlier one of its key, refused, runs after it on the next owner
  @volatile private var revoked = false
  private var released = false
  // offsets finished by an earlier reader, as [from, until) ranges in increasing order (see `skipping`)
  private var skips = List.empty[(Long, Long)]
  private val refusal = s"partition $partition was revoked"

  /**
   * The offsets in `ranges` (`[from, until)`, increasing) were finished by an earlier reader: their records
   * are received as already finished ([[Entry.skipped]]) and never handed out.
   */
  def skipping(ranges: List[(Long, Long)]): Unit = synchronized { skips = ranges }

  /** A record received: appended to the window, already finished when an earlier reader finished it. */
  def receive(offset: Long): Entry = synchronized {
    val e = new Entry(offset, this)
    refuseIfRevoked(e)
    if !released then
      while skips.nonEmpty && skips.head._2 <= offset do skips = skips.tail
      entries.append(e)
      nextOffset = offset + 1
      counters.held.addAndGet(1): Unit
      if skips.nonEmpty && skips.head._1 <= offset then
        e.skipped = true
        finishReceived(e)
    e
  }

  /**
   * A record the poller ends itself, never handed out: finished by an earlier reader, or undecodable (and
   * written to the dead-letter topic, or skipped). Its life ends handed back, and it counts as finished.
   */
  def finishReceived(e: Entry): Unit = synchronized {
    if !released then
      e.life.handBack(): Unit
      e.finished = true
      popFinished()
  }

  /**
   * The engine's question before each attempt ([[weir.Refusable.tryStart]]): the record's start, refused
   * once its partition's revoke began (before the revoke reaches the record itself); granted, it is busy
   * until its attempt ends, and a revoke waits for it. Lock-free; called by the record's worker only.
   */
  def tryStart(e: Entry): Option[String] =
    refuseIfRevoked(e)
    e.life.start()

  private def refuseIfRevoked(e: Entry): Unit =
    if revoked then e.life.refuse(refusal): Unit

  /**
   * An attempt of `e` ended without being interrupted (its registration undone): it is idle until its next
   * attempt or its outcome, which wakes a revoke that waits. Lock-free unless a revoke waits; called by the
   * record's worker only.
   */
  def attemptEnded(e: Entry): Unit =
    val _ = e
    if waiters > 0 then synchronized(notifyAll())

  /**
   * `e` is about to be written to the dead-letter topic: true, and it is busy until its outcome, unless its
   * partition was revoked (the next owner runs it again, and writes it if it fails there too). Called by
   * the record's worker only, as [[tryStart]], and meets a revoke the same way.
   */
  def deadLettering(e: Entry): Boolean = tryStart(e).isEmpty

  /**
   * The record's outcome is known: `counts` when it ran to an end that needs no re-run (succeeded, or failed
   * and skipped or dead-lettered); otherwise it stays unfinished and holds the committable offset back until
   * the partition is given up. Moves the finished prefix on.
   */
  def finish(e: Entry, outcome: TaskOutcome[?, ?], counts: Boolean): Unit =
    finishEach(List((e, outcome, counts)))

  /** [[finish]] for each of `done`, every one of this partition, under one acquisition of the lock. */
  def finishEach(done: Iterable[(Entry, TaskOutcome[?, ?], Boolean)]): Unit = synchronized {
    if !released then
      done.foreach((e, outcome, counts) => if e.life.done(outcome) then e.finished = counts)
      popFinished()
      // an outcome is what `awaitOutcomes` waits for, and the end of a busy record what `awaitIdle` waits for
      if waiters > 0 then notifyAll()
  }

  /** An end an earlier reader's, or an outcome, decided: the record's life no longer moves here. */
  private def ended(e: Entry): Boolean =
    e.life.state match
      case _: Tracked.State.Ending | _: Tracked.State.Ended => true
      case _ => false

  // in an attempt, about to start one, or writing its dead letter, or interrupted in one and not yet ended:
  // what a revoke waits for
  private def busy(e: Entry): Boolean =
    e.life.state match
      case _: Tracked.State.Started | _: Tracked.State.Attempting => true
      case _: Tracked.State.Stopping => e.stopping
      case _ => false

  private def popFinished(): Unit =
    var popped = 0
    while entries.nonEmpty && entries.head.finished && ended(entries.head) do
      entries.removeHead().life.finish(): Unit
      popped += 1
    if popped > 0 then counters.held.addAndGet(-popped): Unit

  /** The offset to commit: the first unfinished record's, or the next to receive; `None` before any. */
  def committable: Option[Long] = synchronized(committableNow)

  private def committableNow: Option[Long] =
    if entries.nonEmpty then Some(entries.head.offset)
    else if nextOffset >= 0 then Some(nextOffset)
    else None

  /**
   * The offset to commit and the metadata that names the records finished above it, in at most
   * `maxBytes` bytes ([[CommitMetadata.encode]]); `None` before any record.
   */
  def commitPoint(maxBytes: Int): Option[(Long, String)] = synchronized {
    committableNow.map { offset =>
      val above = entries.iterator.filter(e => e.finished && ended(e)).map(_.offset)
      (offset, CommitMetadata.encode(offset, above, maxBytes))
    }
  }

  /** Unstarted records refuse from now on, and so do the started ones' next attempts. */
  def revoke(): Unit = synchronized {
    revoked = true
    entries.foreach(_.life.refuse(refusal): Unit)
  }

  /** Waits, until `deadlineNanos` at most, for no record to be busy; true if none is. */
  def awaitIdle(deadlineNanos: Long): Boolean = synchronized {
    awaitWhile(deadlineNanos)(entries.exists(busy))
    !entries.exists(busy)
  }

  /** Waits, until `deadlineNanos` at most, for every started record's outcome; true if all are known. */
  def awaitOutcomes(deadlineNanos: Long): Boolean = synchronized {
    awaitWhile(deadlineNanos)(pending)
    !pending
  }

  // a record that may have run here, without an outcome
  private def pending: Boolean = entries.exists(e => e.life.state.mayHaveRun && !ended(e))

  private def awaitWhile(deadlineNanos: Long)(cond: => Boolean): Unit =
    waiters += 1
    try
      var left = deadlineNanos - System.nanoTime()
      while cond && left > 0 do
        wait(math.max(1L, left / 1000000L)): Unit
        left = deadlineNanos - System.nanoTime()
    finally waiters -= 1

  /**
   * Tells every started record without an outcome to stop, for `reason`: a busy one's attempt is cancelled,
   * an idle one's next attempt is refused, and a retry's wait ends. Returns how many were busy.
   */
  def interruptRunning(reason: String): Int = synchronized {
    entries.count { e =>
      e.life.state.mayHaveRun && !ended(e) && e.life.interrupt(reason) == Tracked.Stop.InAttempt && {
        e.stopping = true
        true
      }
    }
  }

  /** The partition is given up: later calls change nothing, and its records no longer count as held. */
  def release(): Unit = synchronized {
    if !released then
      released = true
      revoked = true
      entries.foreach(_.life.refuse(refusal): Unit)
      counters.held.addAndGet(-entries.size): Unit
      entries.clear()
      skips = Nil
      notifyAll()
  }

  /** A revoke waits on this state (for tests). */
  private[internal] def waiting: Boolean = waiters > 0

  /** Records in the window (for tests). */
  def size: Int = synchronized(entries.size)

  override def toString: String = s"PartitionState($partition)"

private[kafka] object PartitionState:

  /**
   * Finishes each of `done` (a record, its outcome and whether it counts, see [[PartitionState.finish]]),
   * whatever their partitions, taking each partition's lock once: the outcome reader's chunks.
   */
  def finishAll(done: Iterable[(Entry, TaskOutcome[?, ?], Boolean)]): Unit =
    done.groupBy(_._1.state).foreach((state, ds) => state.finishEach(ds))
