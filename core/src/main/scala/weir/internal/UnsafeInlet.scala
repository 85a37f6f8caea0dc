package weir.internal

import fs2.Chunk

import java.util.concurrent.atomic.AtomicLong

/**
 * A single producer's lane into the [[TaskBuffer]]: elements it places without the buffer's lock, which
 * takers move into the buffer's queue under the lock ([[drain]]), in the order they were placed.
 *
 * Why: a producer and its workers that meet on the buffer's lock for every element move the lock's and the
 * state's cache lines between cores once each per element, and on a stream of one-element chunks that
 * hand-over costs more than the element's own production. Through the inlet, the producer writes a slot and
 * its own counter (`tail`); the takers read that counter when their queue is empty, and move at once all
 * that was placed since they last looked.
 *
 * Room: the producer places only on credit, places lent to it by the buffer under the lock (counted there as
 * held, so the buffer's capacity holds whatever sits in the inlet), at most [[Slots]] at a time; a ring of
 * that many slots therefore never overflows. Credit is granted and taken back by the producer itself, under
 * the lock, so no other thread reads it.
 *
 * Parked takers: a producer that placed an element and finds `hungry` raised (takers parked and none
 * spinning, or one about to park: [[BufferState.starving]]) must serve them under the lock; spinners read
 * `tail` in their looks and need no serving. The race it resolves: a taker that looks at `tail` and parks
 * while the producer places one element. The taker raises `hungry` before it reads `tail`; the producer
 * advances `tail` (a compare-and-set, a full fence) before it reads `hungry`: one of the two sees the other.
 *
 * Closing (the buffer stopped or closed): sets the sign bit of `tail` by compare-and-set, after which a
 * placement fails ([[Placed.Closed]]) and the producer offers under the lock, which refuses it. An element is
 * therefore either placed before the close, and drained by it, or refused, never both or neither.
 */
private[weir] final class UnsafeInlet[A] extends AtomicLong(0L):
  import UnsafeInlet.*

  // allocated with the first credit: a run whose producer never reads by element allocates no ring
  private var slots: Array[Any] = NoSlots
  private var head = 0L // the next position to drain; read and written under the buffer's lock
  private var credit = 0 // the producer's own: places it may still fill

  /** Raised and lowered under the buffer's lock ([[BufferState.starving]]); read by the producer. */
  @volatile var hungry = false

  /**
   * Places `a` if the producer has credit and the inlet is open. The producer's call, a plain one: `Placed`,
   * `Hungry` (placed, and parked takers must be served under the lock), or `Closed`/`NoCredit` (not placed).
   */
  def place(a: A): Placed =
    if credit == 0 then Placed.NoCredit
    else
      val t = getPlain
      if t < 0 then Placed.Closed
      else
        val at = (t & Mask).toInt
        slots(at) = a // published by the compare-and-set below, which a drain reads before the slot
        if compareAndSet(t, t + 1) then
          credit -= 1
          if hungry then Placed.Hungry else Placed.Placed
        else
          slots(at) = null // closed meanwhile: no drain reads this slot
          Placed.Closed

  /** Whether something was placed that is not drained: a hint, read without the lock. */
  def nonEmpty: Boolean = (get() & Long.MaxValue) != head

  /** The elements placed since the last drain, in order, as one chunk (empty if none). Under the buffer's lock. */
  def drain(): Chunk[A] =
    val t = get() & Long.MaxValue
    if t == head then Chunk.empty
    else
      val n = (t - head).toInt
      val out = new Array[Any](n)
      var i = 0
      while i < n do
        val at = ((head + i) & Mask).toInt
        out(i) = slots(at)
        slots(at) = null
        i += 1
      head = t
      Chunk.array(out).asInstanceOf[Chunk[A]]

  /** Closes the inlet: no placement succeeds from now on. Under the buffer's lock; drain after it. */
  def close(): Unit =
    var t = get()
    while t >= 0 && !compareAndSet(t, t | Long.MinValue) do t = get()

  def closed: Boolean = get() < 0

  /** The producer's unspent credit, taken back (zero left). The producer's call, under the lock. */
  def takeBack(): Int =
    val c = credit
    credit = 0
    c

  /** Lends `n` places to the producer. The producer's call, under the lock, after a drain and a [[takeBack]]. */
  def lend(n: Int): Unit =
    if slots eq NoSlots then slots = new Array[Any](Slots)
    credit = n

private[weir] object UnsafeInlet:

  /** The most credit at once, and the ring's size (a power of two). */
  val Slots = 256
  private val Mask = Slots - 1L
  private val NoSlots = new Array[Any](0)

  enum Placed:
    case Placed, Hungry, Closed, NoCredit
