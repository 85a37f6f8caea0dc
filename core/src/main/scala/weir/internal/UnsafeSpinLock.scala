package weir.internal

import java.util.concurrent.atomic.AtomicBoolean

/**
 * A lock for critical sections of a few field writes that never wait, call out or allocate much: the task
 * buffer's ([[UnsafeTaskBuffer]]) and the outcome inbox's ([[Inbox]]). A thread that finds it held spins,
 * reading it until it looks free before it tries again, and yields its thread after a while in case the
 * holder was descheduled. A lock that parks a thread it cannot give the lock to at once (a `ReentrantLock`,
 * a contended monitor) costs a park and an unpark of an operating-system thread for each contended take or
 * offer, which a producer and its workers meet on every task when tasks arrive one per chunk; a section
 * this short is over long before a park would be.
 *
 * Not reentrant. Use it as `lock(); try … finally unlock()`.
 */
private[weir] final class UnsafeSpinLock extends AtomicBoolean(false):

  def lock(): Unit =
    if !compareAndSet(false, true) then contended()

  private def contended(): Unit =
    var spins = 0
    while get() || !compareAndSet(false, true) do
      spins += 1
      if spins % UnsafeSpinLock.SpinsPerYield == 0 then Thread.`yield`() else Thread.onSpinWait()

  /**
   * A release store: the next holder's compare-and-set reads it, and with it everything the section wrote. A
   * volatile store would add a full fence, which waits for the section's stores to reach the other core.
   */
  def unlock(): Unit = lazySet(false)

private[weir] object UnsafeSpinLock:
  /** Spins between two yields of the thread. */
  private val SpinsPerYield = 64
