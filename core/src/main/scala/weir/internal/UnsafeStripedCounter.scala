package weir.internal

import java.util.concurrent.atomic.AtomicLongArray

/**
 * A counter that threads add to without writing a cache line another thread writes: each thread adds to a
 * cell of its own (chosen by its id), and [[sum]] adds the cells up.
 *
 * Why not a `LongAdder`: it adds to one shared field until a compare-and-set fails, and only then spreads the
 * threads over cells. Two threads that count each task a few hundred nanoseconds apart rarely collide in
 * that instant, so the shared line goes back and forth between their cores on every count and the adder
 * never spreads. Here the cells are there from the start.
 *
 * Threads whose ids share a cell (more threads than [[Cells]], or ids that collide) still count exactly: an
 * add is atomic; they only share a line again.
 *
 * Memory: [[Cells]] cells of [[Spacing]] longs each, a fixed 4 KiB per counter, however many threads count.
 * [[sum]] reads each cell once: an add made while it reads may be counted or not, as with a `LongAdder`.
 */
private[weir] final class UnsafeStripedCounter:
  import UnsafeStripedCounter.*

  private val cells = new AtomicLongArray(Cells * Spacing)

  def add(n: Long): Unit = cells.getAndAdd(cell, n): Unit

  def increment(): Unit = cells.getAndIncrement(cell): Unit

  def sum: Long =
    var total = 0L
    var i = 0
    while i < Cells do
      total += cells.get(i * Spacing)
      i += 1
    total

private[weir] object UnsafeStripedCounter:

  /** Cells per counter: a power of two; threads beyond it share cells. */
  val Cells: Int = 32

  /** Longs between two cells: 128 bytes, so that no two cells share a line or an adjacent-line prefetch. */
  val Spacing: Int = 16

  private def cell: Int = (Thread.currentThread().threadId().toInt & (Cells - 1)) * Spacing
