package weir.internal

import java.util.ArrayDeque
import scala.annotation.tailrec
import scala.jdk.CollectionConverters.*

/**
 * The per-key bookkeeping of [[weir.TaskOrder.byKey]]: the keys claimed now, each with the entries parked
 * behind it in input order. Mutable and not thread-safe: it is part of its [[BufferState]], and changed only
 * under the buffer's lock, in the same step as the rest of the buffer.
 *
 * An open-addressing table (linear probing, deletion by shifting back the entries after the gap, so that no
 * tombstone is ever left), keyed by Scala's `##` and `==` as a `Map` is (an `Int` key equals the `Long` of the
 * same value): claiming and releasing a key, which every per-key task does, look at the table once each,
 * write a slot each and allocate nothing; the first entry parked behind a key allocates the key's queue. At
 * most half the table's slots are used, and at least an eighth unless it is at its least (16 slots), so that
 * it is bounded by the keys claimed now: by the number of workers, not by the number of keys.
 *
 * Empty slots are `null` keys, and a claimed key with nothing parked has a `null` queue: the nulls stay in
 * this class; its answers are [[Held]] tasks, Booleans and lists.
 */
private[weir] final class UnsafeKeyClaims[A]:
  import UnsafeKeyClaims.*

  private var keys = new Array[Any](MinSlots) // null: an empty slot
  private var queues = new Array[ArrayDeque[Entry[A]]](MinSlots) // null: nothing parked behind the key
  private var claimed = 0

  /** Keys claimed now. */
  def count: Int = claimed

  /** Slots in the table now (for its suite: bounded by the keys claimed). */
  private[internal] def slots: Int = keys.length

  /** Whether `key` is claimed. */
  def isClaimed(key: Any): Boolean = keys(find(key)) != null

  /**
   * Claims `key` if it is free and says so; false, and nothing changes, if it is claimed. One look at the
   * table: every take under per-key admission makes it.
   */
  def tryClaim(key: Any): Boolean =
    var i = find(key)
    if keys(i) != null then false
    else
      if 2 * (claimed + 1) > keys.length then
        resize(keys.length * 2)
        i = find(key)
      keys(i) = key
      queues(i) = null
      claimed += 1
      true

  /** Parks `e` behind its claimed key. */
  def park(e: Entry[A]): Unit =
    val i = find(e.key)
    var queue = queues(i)
    if queue == null then
      queue = new ArrayDeque[Entry[A]]
      queues(i) = queue
    queue.addLast(e)

  /**
   * The first entry parked behind the claimed `key`, which leaves the key's queue (the key stays claimed); or
   * [[NoTask]], and nothing changes. One look at the table: every hand-on of a key makes it.
   */
  def nextParked(key: Any): Held[A] =
    val queue = queues(find(key))
    if queue == null || queue.isEmpty then NoTask else queue.pollFirst()

  /** Releases `key`, with nothing parked behind it, if it is claimed. */
  def unclaim(key: Any): Unit =
    val i = find(key)
    if keys(i) != null then remove(i)

  /** Whether `key` has an entry parked behind it ([[next]] would hand one on). */
  def hasParked(key: Any): Boolean =
    val queue = queues(find(key))
    queue != null && !queue.isEmpty

  /** Releases `e`'s key (its claimant gave it back untaken) and returns the entries parked behind it. */
  def release(e: Entry[A]): List[Entry[A]] =
    if !e.keyed then Nil
    else
      val i = find(e.key)
      if keys(i) == null then Nil
      else
        val queue = queues(i)
        val behind = if queue == null then Nil else List.from(queue.iterator.asScala)
        remove(i)
        behind

  /** The tasks parked behind every key. */
  def tasks: Iterator[A] =
    queues.iterator.filter(_ != null).flatMap(_.iterator.asScala.map(_.task))

  /** Releases every key: what is parked is dropped (the caller has collected it, see [[tasks]]). */
  def clear(): Unit =
    keys = new Array[Any](MinSlots)
    queues = new Array[ArrayDeque[Entry[A]]](MinSlots)
    claimed = 0

  // the slot holding `key`, or the empty slot where it would go
  private def find(key: Any): Int =
    val mask = keys.length - 1
    @tailrec def probe(i: Int): Int =
      val k = keys(i)
      if k == null || k == key then i else probe((i + 1) & mask)
    probe(spread(key.##) & mask)

  // empties slot `i`, then moves back each entry of the run after it that the gap would hide from its probe
  private def remove(i: Int): Unit =
    val mask = keys.length - 1
    var gap = i
    var j = (i + 1) & mask
    while keys(j) != null do
      val home = spread(keys(j).##) & mask
      // the entry at j may fill the gap if its home is not in the cyclic range (gap, j]
      if ((j - home) & mask) >= ((j - gap) & mask) then
        keys(gap) = keys(j)
        queues(gap) = queues(j)
        gap = j
      j = (j + 1) & mask
    keys(gap) = null
    queues(gap) = null
    claimed -= 1
    if keys.length > MinSlots && 8 * claimed < keys.length then resize(keys.length / 2)

  private def resize(length: Int): Unit =
    val (oldKeys, oldQueues) = (keys, queues)
    keys = new Array[Any](length)
    queues = new Array[ArrayDeque[Entry[A]]](length)
    var i = 0
    while i < oldKeys.length do
      val k = oldKeys(i)
      if k != null then
        val j = find(k)
        keys(j) = k
        queues(j) = oldQueues(i)
      i += 1

private[weir] object UnsafeKeyClaims:
  private val MinSlots = 16

  // the hash's high bits folded into the low ones, which pick the slot (the table's length is a power of two)
  private def spread(h: Int): Int = h ^ (h >>> 16)
