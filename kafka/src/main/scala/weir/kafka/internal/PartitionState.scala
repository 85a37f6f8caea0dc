package weir.kafka.internal

import org.apache.kafka.common.TopicPartition
import weir.Interruption

import scala.collection.mutable

/**
 * One record of a partition, from the moment the poller received it until it leaves the partition's
 * window (it is in the finished prefix, or the partition was given up). Mutable, guarded by its
 * partition's lock.
 */
private[kafka] final class Entry(val offset: Long, val state: PartitionState):
  private[internal] var started = false
  private[internal] var done = false
  private[internal] var finished = false
  val interruption = new Interruption

  override def toString: String = s"Entry(${state.partition}@$offset)"

/**
 * The window of one assigned partition: its records in offset order, from the first that has not finished
 * to the last received. The committable offset is the first unfinished record's (or, when every received
 * record has finished, the one after the last received): only the contiguous finished prefix is ever
 * committed, so a restart re-reads from the first record that may not have run, and never skips one.
 *
 * Memory: one entry per record received and not yet in the finished prefix, so the window holds at most
 * the records in flight plus those finished above a slower one; the poller bounds their sum
 * ([[Counters.held]]), whatever the number of keys or partitions.
 *
 * Invariant: `entries` is in increasing offset order, its head is not both done and finished, and
 * `running` counts the entries started and not done. A state that was `released` (the partition was
 * revoked and committed, or lost) ignores every later call: its records belong to another consumer now.
 *
 * Every method takes this state's lock; workers (starts), outcome readers (finishes) and the poller
 * (receipts, revokes, commits) call them concurrently. A revoke waits on the lock's condition for its
 * running records to end, so `finish` notifies.
 */
private[kafka] final class PartitionState(val partition: TopicPartition, counters: Counters):
  private val entries = mutable.ArrayDeque.empty[Entry]
  private var nextOffset = -1L
  private var running = 0
  private var revoked = false
  private var released = false

  /** A record received: appended to the window. */
  def receive(offset: Long): Entry = synchronized {
    val e = new Entry(offset, this)
    if !released then
      entries.append(e)
      nextOffset = offset + 1
      counters.held.addAndGet(1): Unit
    e
  }

  /**
   * The engine's question before each attempt ([[weir.Refusable.refusal]]): a record of a revoked partition
   * refuses; any other is marked started, under the same lock as the revoke, so that a revoke either sees
   * it started (and waits for it) or is seen by it (and it never starts).
   */
  def tryStart(e: Entry): Option[String] = synchronized {
    if revoked then Some(s"partition $partition was revoked")
    else
      e.interruption.requested match
        case Some(reason) => Some(reason)
        case None =>
          if !e.started then
            e.started = true
            running += 1
          None
  }

  /**
   * The record's outcome was read: `counts` when it ran to an end that needs no re-run (succeeded, or failed
   * and skipped or dead-lettered); otherwise it stays unfinished and holds the committable offset back until
   * the partition is given up. Moves the finished prefix on.
   */
  def finish(e: Entry, counts: Boolean): Unit = synchronized {
    if !released && !e.done then
      e.done = true
      e.finished = counts
      if e.started then running -= 1
      var popped = 0
      while entries.nonEmpty && entries.head.done && entries.head.finished do
        entries.removeHead(): Unit
        popped += 1
      counters.held.addAndGet(-popped): Unit
      if revoked then notifyAll()
  }

  /** The offset to commit: the first unfinished record's, or the next to receive; `None` before any. */
  def committable: Option[Long] = synchronized {
    if entries.nonEmpty then Some(entries.head.offset)
    else if nextOffset >= 0 then Some(nextOffset)
    else None
  }

  /** Unstarted records refuse from now on; the started ones go on. */
  def revoke(): Unit = synchronized { revoked = true }

  /** Waits, until `deadlineNanos` at most, for no record to be running; true if none is. */
  def awaitIdle(deadlineNanos: Long): Boolean = synchronized {
    var left = deadlineNanos - System.nanoTime()
    while running > 0 && left > 0 do
      wait(math.max(1L, left / 1000000L)): Unit
      left = deadlineNanos - System.nanoTime()
    running == 0
  }

  /** Tells every running record to stop, for `reason` (their attempts are cancelled). */
  def interruptRunning(reason: String): Int = synchronized {
    val running = entries.filter(e => e.started && !e.done)
    running.foreach(_.interruption.request(reason): Unit)
    running.size
  }

  /** The partition is given up: later calls change nothing, and its records no longer count as held. */
  def release(): Unit = synchronized {
    if !released then
      released = true
      revoked = true
      counters.held.addAndGet(-entries.size): Unit
      entries.clear()
      notifyAll()
  }

  /** Records in the window (for tests). */
  def size: Int = synchronized(entries.size)

  override def toString: String = s"PartitionState($partition)"
