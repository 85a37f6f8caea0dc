package weir.kafka.internal

import org.apache.kafka.common.TopicPartition
import weir.Interruption

import java.util.concurrent.atomic.AtomicInteger
import scala.collection.mutable

/**
 * One record of a partition, from the moment the poller received it until it leaves the partition's
 * window (it is in the finished prefix, or the partition was given up). `started` and `busy` are written
 * by the record's worker fiber only, without the lock (see [[PartitionState]]); `done` and `finished`
 * under its partition's lock.
 */
private[kafka] final class Entry(val offset: Long, val state: PartitionState):
  // passed its first refusal: it may run, and its outcome is awaited by a revoke; volatile because a
  // revoke's wait reads it on the poller thread while the worker may still take the mark back
  @volatile private[internal] var started = false
  // inside an attempt of its handler, or inside its dead-letter write: a revoke waits for it
  private[internal] var busy = false
  private[internal] var done = false
  private[internal] var finished = false
  // finished by an earlier reader, as the last commit's metadata says: never handed to the pipeline
  private[kafka] var skipped = false
  val interruption = new Interruption

  override def toString: String = s"Entry(${state.partition}@$offset)"

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
 * A record's life: received → started (its first refusal let it start) → busy while an attempt or its
 * dead-letter write runs, idle between attempts (a retry's backoff, or while its outcome is recorded) →
 * done (its outcome is known), finished or not. A revoke waits for the busy records only: a record between
 * two attempts asks its refusal again before the next one, and that refusal sees the revoke and refuses, so
 * it never runs again here.
 *
 * Concurrency: workers (starts, attempt ends, once per record or attempt), the outcome reader (finishes,
 * a chunk of outcomes at a time) and the poller (receipts, revokes, waits, commits) call these methods
 * concurrently. The window (`entries`, `done`, `finished`, `skips`) is guarded by this state's lock, taken
 * by the poller and once per chunk by the reader. A worker's start and attempt end take no lock: they mark
 * the record and move the atomic `busy` count, and meet a revoke as in Dekker's algorithm: a start raises
 * `busy` and then reads `revoked`, a revoke sets `revoked` and then reads `busy` (both sequentially
 * consistent), so either the revoke sees the record busy and waits for it, or the start sees the revoke,
 * takes its marks back and refuses. The raise of `busy` comes after the record's own marks, so a revoke
 * that read `busy` sees them. A waiter (the revoke, on the poller thread) counts itself in `waiters` under
 * the lock before it reads what it waits for, and a change it waits for reads `waiters` after making the
 * change and notifies under the lock: either the waiter sees the change, or the change sees the waiter;
 * and since the waiter holds the lock from its check to its `wait`, the notification cannot fall between
 * the two. With no waiter, as outside a revoke, a start or an attempt end is one atomic add.
 *
 * Invariant: `entries` is in increasing offset order, its head is not both done and finished, and `busy`
 * counts the busy entries (and, for a moment, a start that is taking its mark back). A state that was
 * `released` (the partition was revoked and committed, or lost) ignores every later finish: its records
 * belong to another consumer now.
 */
private[kafka] final class PartitionState(val partition: TopicPartition, counters: Counters):
  private val entries = mutable.ArrayDeque.empty[Entry]
  private var nextOffset = -1L
  private val busy = new AtomicInteger
  @volatile private var waiters = 0
  @volatile private var revoked = false
  private var released = false
  // offsets finished by an earlier reader, as [from, until) ranges in increasing order (see `skipping`)
  private var skips = List.empty[(Long, Long)]

  /**
   * The offsets in `ranges` (`[from, until)`, increasing) were finished by an earlier reader: their records
   * are received as already finished ([[Entry.skipped]]) and never handed out.
   */
  def skipping(ranges: List[(Long, Long)]): Unit = synchronized { skips = ranges }

  /** A record received: appended to the window, already finished when an earlier reader finished it. */
  def receive(offset: Long): Entry = synchronized {
    val e = new Entry(offset, this)
    if !released then
      while skips.nonEmpty && skips.head._2 <= offset do skips = skips.tail
      entries.append(e)
      nextOffset = offset + 1
      counters.held.addAndGet(1): Unit
      if skips.nonEmpty && skips.head._1 <= offset then
        e.skipped = true
        e.done = true
        e.finished = true
        popFinished()
    e
  }

  /**
   * The engine's question before each attempt ([[weir.Refusable.tryStart]]): a record of a revoked partition
   * refuses; any other is marked started and busy, so that a revoke either sees it busy (and waits for it)
   * or is seen by it (and it never starts, or never starts again). Lock-free; called by the record's worker
   * only.
   */
  def tryStart(e: Entry): Option[String] =
    if revoked then refused
    else
      val first = !e.started
      if first then e.started = true
      val marked = !e.busy && !e.done
      if marked then
        e.busy = true
        busy.incrementAndGet(): Unit
      // after the raise of `busy`: a revoke that set `revoked` before this read waits for `busy` to fall
      if !revoked then None
      else
        if first then e.started = false
        if marked then
          e.busy = false
          lowerBusy()
        refused

  private def refused: Option[String] = Some(s"partition $partition was revoked")

  /**
   * An attempt of `e` ended without being interrupted: it is idle until its next attempt or its outcome.
   * Lock-free unless a revoke waits; called by the record's worker only.
   */
  def attemptEnded(e: Entry): Unit =
    if e.busy then
      e.busy = false
      lowerBusy()

  // the worker's side of the handshake with a waiter (see the class comment)
  private def lowerBusy(): Unit =
    busy.decrementAndGet(): Unit
    if waiters > 0 then synchronized(notifyAll())

  /**
   * `e` is about to be written to the dead-letter topic: true, and it is busy until its outcome, unless its
   * partition was revoked (the next owner runs it again, and writes it if it fails there too). Called by
   * the record's worker only, as [[tryStart]], and meets a revoke the same way.
   */
  def deadLettering(e: Entry): Boolean =
    if revoked || e.done then false
    else if e.busy then true
    else
      e.busy = true
      busy.incrementAndGet(): Unit
      if !revoked then true
      else
        e.busy = false
        lowerBusy()
        false

  /**
   * The record's outcome is known: `counts` when it ran to an end that needs no re-run (succeeded, or failed
   * and skipped or dead-lettered); otherwise it stays unfinished and holds the committable offset back until
   * the partition is given up. Moves the finished prefix on.
   */
  def finish(e: Entry, counts: Boolean): Unit = finishEach(List(e -> counts))

  /** [[finish]] for each of `done`, every one of this partition, under one acquisition of the lock. */
  def finishEach(done: Iterable[(Entry, Boolean)]): Unit = synchronized {
    if !released then
      done.foreach { (e, counts) =>
        if !e.done then
          e.done = true
          e.finished = counts
          if e.busy then
            e.busy = false
            busy.decrementAndGet(): Unit
      }
      popFinished()
      // an outcome is what `awaitOutcomes` waits for, and a fall of `busy` what `awaitIdle` waits for
      if waiters > 0 then notifyAll()
  }

  private def popFinished(): Unit =
    var popped = 0
    while entries.nonEmpty && entries.head.done && entries.head.finished do
      entries.removeHead(): Unit
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
      val above = entries.iterator.filter(e => e.done && e.finished).map(_.offset)
      (offset, CommitMetadata.encode(offset, above, maxBytes))
    }
  }

  /** Unstarted records refuse from now on, and so do the started ones' next attempts. */
  def revoke(): Unit = revoked = true

  /** Waits, until `deadlineNanos` at most, for no record to be busy; true if none is. */
  def awaitIdle(deadlineNanos: Long): Boolean = synchronized {
    awaitWhile(deadlineNanos)(busy.get > 0)
    busy.get == 0
  }

  /** Waits, until `deadlineNanos` at most, for every started record's outcome; true if all are known. */
  def awaitOutcomes(deadlineNanos: Long): Boolean = synchronized {
    awaitWhile(deadlineNanos)(pending)
    !pending
  }

  // a started record without an outcome; a start taking its mark back lowers `busy` after the mark, and
  // so wakes this check
  private def pending: Boolean = entries.exists(e => e.started && !e.done)

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
   * an idle one's next attempt is. Returns how many were busy.
   */
  def interruptRunning(reason: String): Int = synchronized {
    val started = entries.filter(e => e.started && !e.done)
    started.foreach(_.interruption.request(reason): Unit)
    started.count(_.busy)
  }

  /** The partition is given up: later calls change nothing, and its records no longer count as held. */
  def release(): Unit = synchronized {
    if !released then
      released = true
      revoked = true
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
   * Finishes each of `done` (a record and whether it counts, see [[PartitionState.finish]]), whatever their
   * partitions, taking each partition's lock once: the outcome reader's chunks.
   */
  def finishAll(done: Iterable[(Entry, Boolean)]): Unit =
    done.groupBy(_._1.state).foreach((state, ds) => state.finishEach(ds))
