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
 * A slot is two neighbouring cells of one array, the key and its queue, so that a look at a key touches one
 * cache line, not one in each of two arrays: the table is written under the buffer's lock by workers on every
 * compute thread, and each line a turn writes is a line the next turn, on another core, must fetch.
 *
 * Empty slots are `null` keys, and a claimed key with nothing parked has a `null` queue: the nulls stay in
 * this class; its answers are [[Held]] tasks, Booleans and lists.
 */
private[weir] final class UnsafeKeyClaims[A]:
  import UnsafeKeyClaims.*

  // slot i: the key at 2i (null: an empty slot), its queue at 2i + 1 (null: nothing parked behind it)
  private var cells = new Array[AnyRef](2 * MinSlots)
  private var claimed = 0

  /** Keys claimed now. */
  def count: Int = claimed

  /** Slots in the table now: bounded by the keys claimed (its suite checks it). */
  private[internal] def slots: Int = cells.length / 2

  /** Whether `key` is claimed. */
  def isClaimed(key: Any): Boolean = keyAt(find(key)) != null

  /**
   * Claims `key` if it is free and says so; false, and nothing changes, if it is claimed. One look at the
   * table: every take under per-key admission makes it.
   */
  def tryClaim(key: Any): Boolean =
    var i = find(key)
    if keyAt(i) != null then false
    else
      if 2 * (claimed + 1) > slots then
        resize(slots * 2)
        i = find(key)
      cells(2 * i) = key.asInstanceOf[AnyRef]
      cells(2 * i + 1) = null
      claimed += 1
      true

  /** Parks `e` behind its claimed key. */
  def park(e: Entry[A]): Unit =
    val i = find(e.key)
    var queue = queueAt(i)
    if queue == null then
      queue = new ArrayDeque[Entry[A]]
      cells(2 * i + 1) = queue
    queue.addLast(e)

  /**
   * The first entry parked behind the claimed `key`, which leaves the key's queue (the key stays claimed); or
   * [[NoTask]], and nothing changes. One look at the table: every hand-on of a key makes it.
   */
  def nextParked(key: Any): Held[A] =
    val queue = queueAt(find(key))
    if queue == null || queue.isEmpty then NoTask else queue.pollFirst()

  /** Releases `key`, with nothing parked behind it, if it is claimed. */
  def unclaim(key: Any): Unit =
    val i = find(key)
    if keyAt(i) != null then remove(i)

  /** Whether `key` has an entry parked behind it ([[next]] would hand one on). */
  def hasParked(key: Any): Boolean =
    val queue = queueAt(find(key))
    queue != null && !queue.isEmpty

  /** Releases `e`'s key (its claimant gave it back untaken) and returns the entries parked behind it. */
  def release(e: Entry[A]): List[Entry[A]] =
    if !e.keyed then Nil
    else
      val i = find(e.key)
      if keyAt(i) == null then Nil
      else
        val queue = queueAt(i)
        val behind = if queue == null then Nil else List.from(queue.iterator.asScala)
        remove(i)
        behind

  /** The tasks parked behind every key. */
  def tasks: Iterator[A] =
    Iterator.range(0, slots).map(queueAt).filter(_ != null).flatMap(_.iterator.asScala.map(_.task))

  /** Releases every key: what is parked is dropped (the caller has collected it, see [[tasks]]). */
  def clear(): Unit =
    cells = new Array[AnyRef](2 * MinSlots)
    claimed = 0

  private def keyAt(i: Int): AnyRef = cells(2 * i)

  private def queueAt(i: Int): ArrayDeque[Entry[A]] = cells(2 * i + 1).asInstanceOf[ArrayDeque[Entry[A]]]

  // the slot holding `key`, or the empty slot where it would go
  private def find(key: Any): Int =
    val mask = slots - 1
    @tailrec def probe(i: Int): Int =
      val k = keyAt(i)
      if k == null || k == key then i else probe((i + 1) & mask)
    probe(spread(key.##) & mask)

  // empties slot `i`, then moves back each entry of the run after it that the gap would hide from its probe
  private def remove(i: Int): Unit =
    val mask = slots - 1
    var gap = i
    var j = (i + 1) & mask
    while keyAt(j) != null do
      val home = spread(keyAt(j).##) & mask
      // the entry at j may fill the gap if its home is not in the cyclic range (gap, j]
      if ((j - home) & mask) >= ((j - gap) & mask) then
        cells(2 * gap) = cells(2 * j)
        cells(2 * gap + 1) = cells(2 * j + 1)
        gap = j
      j = (j + 1) & mask
    cells(2 * gap) = null
    cells(2 * gap + 1) = null
    claimed -= 1
    if slots > MinSlots && 8 * claimed < slots then resize(slots / 2)

  private def resize(length: Int): Unit =
    val old = cells
    cells = new Array[AnyRef](2 * length)
    var i = 0
    while i < old.length do
      val k = old(i)
      if k != null then
        val j = find(k)
        cells(2 * j) = k
        cells(2 * j + 1) = old(i + 1)
      i += 2

private[weir] object UnsafeKeyClaims:
  private val MinSlots = 16

  // the hash's high bits folded into the low ones, which pick the slot (the table's length is a power of two)
  private def spread(h: Int): Int = h ^ (h >>> 16)
