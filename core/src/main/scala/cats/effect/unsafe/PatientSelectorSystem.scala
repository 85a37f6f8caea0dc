package cats.effect.unsafe

import java.util.concurrent.atomic.AtomicReference
import java.util.concurrent.locks.LockSupport

/**
 * Cats Effect's selector polling system with one change: a compute thread woken from its park waits for
 * the thread that woke it without holding the CPU that thread needs.
 *
 * ==The race==
 * A thread that wakes a parked compute thread marks its signal `Interrupting`, wakes it, then marks it
 * `Unparked`. The woken thread, once it runs, spins until the mark leaves `Interrupting`. When the kernel
 * puts the woken thread on the waker's CPU and lets it preempt the waker between those two marks, the
 * spinner holds the CPU the waker needs to finish, until the scheduler's time slice ends: a few
 * milliseconds in which neither thread makes progress. `docs/adr/0024-patient-wake-up.md` has the trace
 * that shows it and what it cost.
 *
 * ==The change==
 * `poll` parks the thread itself (through the selector when channels are registered, with `LockSupport`
 * otherwise) and, before it returns, waits while the signal reads `Interrupting`: a short spin, then
 * `Thread.yield`, then short parks, so a preempted waker gets the CPU back at once. Cats Effect's own
 * spin then finds `Unparked` and never loops. `interrupt` wakes the thread both ways, since it may be in
 * either park. Everything else (the selector API that fs2's sockets use, the pollers' metrics) is the
 * wrapped `SelectorSystem`'s.
 *
 * It lives in Cats Effect's package because the signal it watches is private to it; it is written
 * against Cats Effect 3.7.1, the version weir's build pins. [[PatientSelectorSystem.orSelectors]] checks
 * that the Cats Effect on the class path still has that signal before choosing this system.
 */
final class PatientSelectorSystem(val selectors: SelectorSystem) extends PollingSystem:
  type Api = selectors.Api
  type Poller = selectors.Poller

  def close(): Unit = selectors.close()

  def makeApi(ctx: PollingContext[Poller]): Api = selectors.makeApi(ctx)

  def makePoller(): Poller = selectors.makePoller()

  def closePoller(poller: Poller): Unit = selectors.closePoller(poller)

  def poll(poller: Poller, nanos: Long): PollResult =
    if nanos == 0L then
      if selectors.needsPoll(poller) then selectors.poll(poller, 0L) else PollResult.Interrupted
    else
      val result =
        if selectors.needsPoll(poller) then selectors.poll(poller, nanos)
        else
          if nanos < 0L then LockSupport.park() else LockSupport.parkNanos(nanos)
          PollResult.Interrupted
      if result eq PollResult.Interrupted then
        Thread.currentThread() match
          case worker: WorkerThread[?] => PatientSelectorSystem.awaitWaker(worker.parked)
          case _ => ()
      result

  def processReadyEvents(poller: Poller): Boolean = selectors.processReadyEvents(poller)

  // Always true, so that every park of a compute thread goes through `poll` above.
  def needsPoll(poller: Poller): Boolean = true

  def interrupt(targetThread: Thread, targetPoller: Poller): Unit =
    selectors.interrupt(targetThread, targetPoller)
    LockSupport.unpark(targetThread)

  def metrics(poller: Poller): cats.effect.unsafe.metrics.PollerMetrics = selectors.metrics(poller)

object PatientSelectorSystem:

  /** A patient system over Cats Effect's default selector system. */
  def apply(): PatientSelectorSystem = new PatientSelectorSystem(SelectorSystem())

  /**
   * A patient system if the Cats Effect on the class path has the parked signal it watches, else Cats
   * Effect's own selector system: a release that moved the signal loses the fix, not its compute threads
   * (which would otherwise fail to link on their first park).
   */
  def orSelectors(): PollingSystem =
    if hasParkedSignal(classOf[WorkerThread[?]]) then apply() else SelectorSystem()

  private[unsafe] def hasParkedSignal(worker: Class[?]): Boolean =
    try
      worker.getMethod("parked").getReturnType == classOf[AtomicReference[?]] &&
        (ParkedSignal.Interrupting ne null)
    catch case _: NoSuchMethodException | _: LinkageError => false

  private val Spins = 64
  private val Yields = 64
  private val ParkNanos = 10_000L

  /**
   * Returns once `signal` no longer reads `Interrupting`. The waker sets it right after its wake-up call
   * returns, so the spin covers a waker running on another CPU; the yields and parks cover one preempted
   * on this CPU, which needs this thread off it.
   */
  private[unsafe] def awaitWaker(signal: AtomicReference[ParkedSignal]): Unit =
    var rounds = 0
    while signal.get() eq ParkedSignal.Interrupting do
      if rounds < Spins then Thread.onSpinWait()
      else if rounds < Spins + Yields then Thread.`yield`()
      else LockSupport.parkNanos(ParkNanos)
      rounds += 1
