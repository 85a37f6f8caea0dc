package weir.internal

import scala.collection.immutable.Queue as ScalaQueue

/**
 * When the chunks a [[BufferState]] holds entered the buffer, for a run that measures queue waits: one
 * reading per chunk, not per task, because the buffer keeps the producers' chunks and makes an entry of a
 * task only when it is taken ([[TimedEntry]]). A run that does not measure holds [[EnqueueTimes.Off]] and
 * reads no clock.
 */
private[weir] sealed trait EnqueueTimes:
  /** After appending a chunk at `now` behind the ones held, or as the new head chunk (`asHead`). */
  def appended(now: Long, asHead: Boolean): EnqueueTimes

  /** After the head chunk was used up and the next one became the head. */
  def nextHead: EnqueueTimes

  /** An entry for the task at input position `seq` of the head chunk. */
  def entry[A](seq: Long, task: A, key: Any): Entry[A]

private[weir] object EnqueueTimes:

  /** Queue waits are not measured. */
  case object Off extends EnqueueTimes:
    def appended(now: Long, asHead: Boolean): EnqueueTimes = this
    def nextHead: EnqueueTimes = this
    def entry[A](seq: Long, task: A, key: Any): Entry[A] = Entry(seq, task, key)

  /** `head`: when the head chunk entered; `rest`: the chunks behind it, in the buffer's order. */
  final case class On(head: Long, rest: ScalaQueue[Long]) extends EnqueueTimes:
    def appended(now: Long, asHead: Boolean): EnqueueTimes =
      if asHead then On(now, ScalaQueue.empty) else copy(rest = rest.enqueue(now))
    def nextHead: EnqueueTimes =
      val (next, more) = rest.dequeue
      On(next, more)
    def entry[A](seq: Long, task: A, key: Any): Entry[A] = TimedEntry(seq, task, key, head)

  /** A buffer's times at its start. */
  def apply(measured: Boolean): EnqueueTimes = if measured then On(0L, ScalaQueue.empty) else Off
