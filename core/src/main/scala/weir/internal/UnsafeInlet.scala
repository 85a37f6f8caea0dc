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
 * The counter is published by a release store, not a compare-and-set: takers that look for work read its
 * cache line between two placements, and a locked instruction would wait for that line to come back to the
 * producer's core on every element, where a plain store lets the producer go on to its next element
 * meanwhile. The two consequences, each answered below, are that the producer never synchronises with a
 * close, and that it may read `hungry` before its store is seen.
 *
 * Room: the producer places only on credit, places lent to it by the buffer under the lock (counted there as
 * held, so the buffer's capacity holds whatever sits in the inlet), at most [[Slots]] at a time; a ring of
 * that many slots therefore never overflows. Credit is granted and taken back by the producer itself, under
 * the lock, so no other thread reads it.
 *
 * Parked takers: a producer that placed an element and finds `hungry` raised (takers parked and none
 * spinning: [[BufferState.starving]]) must serve them under the lock; spinners read `tail` in their looks
 * and need no serving. A taker that parks raises `hungry` before it reads `tail`, and a placement that reads
 * `hungry` after it; with no fence between the producer's store and its read, both can miss each other
 * (a store may still be on its way when the taker looks), and the element then waits for nobody. The buffer
 * therefore looks at the inlet again a moment after takers start starving ([[BufferState.armRecheck]]), by
 * which time every store made before the raise was seen has landed; any later placement, offer or end of
 * the producer serves them too.
 *
 * Closing (the buffer stopped or closed): a flag the producer reads before each placement, after which it
 * offers under the lock, which refuses. A placement racing the close may land after the close's drain; it
 * stays in the inlet, counted held, until the next drain: a close comes only after the producer ended (its
 * last placement is then seen), and a stop is followed, once the producer ended, by the buffer's collection of
 * what it holds ([[BufferState.tasks]]), which drains the inlet. Every placed element is drained exactly once.
 */
private[weir] final class UnsafeInlet[A] extends AtomicLong(0L):
  import UnsafeInlet.*

  // allocated with the first credit: a run whose producer never reads by element allocates no ring
  private var slots: Array[Any] = NoSlots
  private var head = 0L // the next position to drain; read and written under the buffer's lock
  private var credit = 0 // the producer's own: places it may still fill

  /** Raised and lowered under the buffer's lock ([[BufferState.starving]]); read by the producer. */
  @volatile var hungry = false

  // set under the buffer's lock, read by the producer before each placement
  @volatile private var shut = false

  /**
   * Places `a` if the producer has credit and the inlet is open. The producer's call, a plain one: `Placed`,
   * `Hungry` (placed, and parked takers must be served under the lock), or `Closed`/`NoCredit` (not placed).
   */
  def place(a: A): Placed =
    if credit == 0 then Placed.NoCredit
    else if shut then Placed.Closed
    else
      val t = getPlain
      slots((t & Mask).toInt) = a
      lazySet(t + 1) // a release store: a drain that reads `tail` reads the slot after it
      credit -= 1
      if hungry then Placed.Hungry else Placed.Placed

  /**
   * Every element placed since the run began: the count of them received ([[Ledger]] counts only offers).
   * Any thread; it includes an element as soon as a drain can take it.
   */
  def placed: Long = get()

  /** Whether something was placed that is not drained: a hint, read without the lock. */
  def nonEmpty: Boolean = get() != head

  /** The elements placed since the last drain, in order, as one chunk (empty if none). Under the buffer's lock. */
  def drain(): Chunk[A] =
    val t = get()
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

  /**
   * Closes the inlet: a placement that reads the flag after this is refused. Under the buffer's lock; drain
   * after it (and again once the producer ended: see the close above).
   */
  def close(): Unit = shut = true

  def closed: Boolean = shut

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
