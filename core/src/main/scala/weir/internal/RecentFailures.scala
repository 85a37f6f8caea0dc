package weir.internal

import weir.TaskOutcome

/**
 * The last `capacity` failed tasks of a run, oldest first: the bounded sample a [[weir.Summary]] carries.
 * A run that fails a task a second for weeks keeps `capacity` of them, not every one; the full record of
 * failures is the outcomes stream.
 *
 * A ring under the object's lock: a failure writes one slot, overwriting the oldest once the ring holds
 * `capacity`. Failures are the uncommon path, and a lock held for one array write is cheaper than copying
 * an immutable sequence on each. The ring grows by doubling up to `capacity`, so a large sample costs only
 * the failures it holds. With `capacity` 0 nothing is kept and nothing is locked.
 *
 * Safe from any thread. "Last" is the order of the calls to [[add]], which is the order in which workers
 * record their tasks, not necessarily the order in which the handlers ended.
 */
private[weir] final class RecentFailures[A](capacity: Int):
  // guarded by `this`: the slots (each read only once written) and the failures added so far; the ring is
  // shorter than `capacity` only while it has never been full, so a slot's index is `written % length`
  private var ring = new Array[TaskOutcome.Failed[A, Nothing]](math.min(capacity, 16))
  private var written = 0L

  def add(failure: TaskOutcome.Failed[A, Nothing]): Unit =
    if capacity > 0 then
      synchronized {
        if written == ring.length && ring.length < capacity then
          ring = java.util.Arrays.copyOf(ring, math.min(capacity.toLong, ring.length * 2L).toInt)
        ring((written % ring.length).toInt) = failure
        written += 1
      }

  /** The failures kept, oldest first. */
  def toVector: Vector[TaskOutcome.Failed[A, Nothing]] =
    if capacity == 0 then Vector.empty
    else
      synchronized {
        val kept = math.min(written, ring.length.toLong).toInt
        val first = written - kept
        Vector.tabulate(kept)(i => ring(((first + i) % ring.length).toInt))
      }
