package weir.internal

/**
 * A task held by the [[TaskBuffer]]: its input position and, under per-key admission, its key ([[NoKey]]
 * without a key function, a [[KeyFailure]] when the key function threw on it).
 *
 * It is also the "handed out" case of the buffer's answers ([[Handout]]), so that handing out a task
 * allocates no wrapper around it.
 */
private[weir] class Entry[+A](val seq: Long, val task: A, val key: Any) extends Handout[A], Held[A]:
  /** Whether this task waits for its key: it has one, and the key function did not fail on it. */
  def keyed: Boolean = (key.asInstanceOf[AnyRef] ne NoKey) && !key.isInstanceOf[KeyFailure]

/**
 * An [[Entry]] of a run that measures queue waits: `enqueuedAt` is when its chunk entered the buffer
 * (monotonic nanoseconds of the run's clock). A subclass rather than a field, so that a run that does not
 * measure allocates no larger entry.
 */
private[weir] final class TimedEntry[+A](seq: Long, task: A, key: Any, val enqueuedAt: Long)
    extends Entry[A](seq, task, key)

/**
 * What a worker holds between a task's start and its record ([[Worker]]): the [[Entry]] started, or
 * [[NoTask]] between tasks. A type of its own, so that the worker's field is never null and holding an entry
 * needs no wrapper.
 */
private[weir] sealed trait Held[+A]

/** A worker between two tasks: none started and not yet recorded. */
private[weir] case object NoTask extends Held[Nothing]

/** The key of a task whose key function threw: never equal to another key, so it never waits. */
private[weir] final class KeyFailure(val error: Throwable)

/** The key of every entry of a run without a key function: such entries claim and wait for nothing. */
private[weir] case object NoKey

/**
 * The buffer's answer to whoever asks it for a task — a take, plain ([[UnsafeTaskBuffer.tryTake]]) or in
 * the shell ([[TaskBuffer.take]]), or a key's hand-on ([[UnsafeTaskBuffer.tryFinishKey]],
 * [[TaskBuffer.finishKey]]): the [[Entry]] handed out, or why none was. One vocabulary for every way of
 * asking; each call says which of the answers it gives. The answers without a task are single objects, so
 * that an answer allocates nothing unless a task is handed out.
 */
private[weir] sealed trait Handout[+A]

/**
 * Nothing changed: the answer needs a wait or a wake-up (the buffer is empty or stopped, or handing the task
 * out would have to wake a producer). Ask the effectful shell, [[TaskBuffer]], which waits or wakes as needed.
 */
private[weir] case object Later extends Handout[Nothing]

/** The key is free again: nothing was parked behind it (or the buffer is stopped), and nothing was taken. */
private[weir] case object Released extends Handout[Nothing]

/** Nothing, ever again: the buffer is stopped, or closed and emptied. */
private[weir] case object Finished extends Handout[Nothing]

/** Nothing claimable now: the taker waits (registered, when it gave its callback). */
private[weir] case object Wait extends Handout[Nothing]

/** Nothing claimable now: the taker spins a little before it waits (see `TaskBuffer.spin`). */
private[weir] case object Spin extends Handout[Nothing]
