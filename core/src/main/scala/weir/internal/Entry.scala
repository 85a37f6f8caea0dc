package weir.internal

/**
 * A task held by the [[TaskBuffer]]: its input position and, under per-key admission, its key (`null`
 * without a key function, a [[KeyFailure]] when the key function threw on it).
 *
 * It is also the value of the buffer's plain results ([[Took]], [[KeyTurn]]), so that handing out a task
 * allocates no wrapper around it.
 */
private[weir] class Entry[+A](val seq: Long, val task: A, val key: Any) extends Took[A], KeyTurn[A]:
  /** Whether this task waits for its key: it has one, and the key function did not fail on it. */
  def keyed: Boolean = key != null && !key.isInstanceOf[KeyFailure]

/**
 * An [[Entry]] of a run that measures queue waits: `enqueuedAt` is when its chunk entered the buffer
 * (monotonic nanoseconds of the run's clock). A subclass rather than a field, so that a run that does not
 * measure allocates no larger entry.
 */
private[weir] final class TimedEntry[+A](seq: Long, task: A, key: Any, val enqueuedAt: Long)
    extends Entry[A](seq, task, key)

/** The key of a task whose key function threw: never equal to another key, so it never waits. */
private[weir] final class KeyFailure(val error: Throwable)

/** What [[UnsafeTaskBuffer.tryTake]] returns: the [[Entry]] taken, or [[TakeLater]]. */
private[weir] sealed trait Took[+A]

/**
 * Nothing was taken and nothing changed: the buffer is empty, stopped, or the take would have to wake a
 * producer. Take with [[TaskBuffer.take]], which waits or wakes as needed.
 */
private[weir] case object TakeLater extends Took[Nothing]

/**
 * What [[UnsafeTaskBuffer.tryFinishKey]] returns: the caller's next [[Entry]] — parked behind the key (the
 * key stays claimed by the caller) or, the key released, taken in the same step (its key claimed by the
 * caller) — [[KeyReleased]], or [[KeyTurnLater]].
 */
private[weir] sealed trait KeyTurn[+A]

/** Nothing was parked behind the key (or the buffer is stopped): the key is free again. */
private[weir] case object KeyReleased extends KeyTurn[Nothing]

/**
 * Nothing changed: handing the next entry on would free a place a waiting producer needs. Finish the key
 * with [[TaskBuffer.finishKey]], which wakes it.
 */
private[weir] case object KeyTurnLater extends KeyTurn[Nothing]
