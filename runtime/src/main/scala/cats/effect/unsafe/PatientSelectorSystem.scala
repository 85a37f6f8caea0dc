package cats.effect.unsafe

import java.util.concurrent.atomic.{AtomicBoolean, AtomicReference}
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
 * ==Which Cats Effect==
 * It lives in Cats Effect's package because the signal it watches is package-private, and it is written
 * against one Cats Effect release, [[PatientSelectorSystem.WrittenAgainst]]: that signal and the protocol
 * around it (`WorkStealingThreadPool.notifyParked`) are internals, free to change in any release.
 * [[PatientSelectorSystem.orDefault]] therefore takes it only on that exact version and otherwise gives Cats
 * Effect's default polling system, with a notice once per JVM, on stderr or wherever the caller says
 * (`docs/adr/0024-patient-wake-up.md` has the upstream issue that would make this file unnecessary).
 */
final class PatientSelectorSystem private[unsafe] (val selectors: SelectorSystem) extends PollingSystem:
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

  /** The Cats Effect release whose package-private wake-up protocol this system was written against. */
  val WrittenAgainst: String = "3.7.1"

  /**
   * This system if the Cats Effect on the class path is [[WrittenAgainst]], else Cats Effect's default
   * polling system and, once per JVM, a warning on stderr naming both versions: on another release the
   * signal may have moved (the compute threads would fail to link on their first park) or changed meaning
   * (they would wait for a mark that never comes), so that release loses the fix, not its compute threads.
   */
  def orDefault(): PollingSystem = orDefault(System.err.println)

  /**
   * [[orDefault]], its notice sent to `notice` instead of stderr (weir's runtime sends it to the user's
   * logger, when given one). Still once per JVM, whichever of the two said it first.
   */
  def orDefault(notice: String => Unit): PollingSystem =
    choose(CatsEffectVersion.onClassPath(), new Once(notice, noticed))

  /** [[orDefault]] with the version found and the warning's destination given. */
  private[unsafe] def choose(found: Option[String], warn: String => Unit): PollingSystem =
    if found.contains(WrittenAgainst) then apply()
    else
      warn(
        s"weir-runtime: PatientSelectorSystem was written against Cats Effect $WrittenAgainst, but the " +
          s"Cats Effect on the class path is ${found.getOrElse("of an unknown version")}; using Cats Effect's " +
          "default polling system instead (compute threads woken from a park may stall for a time slice " +
          "on a busy machine; see weir's docs/adr/0024-patient-wake-up.md)"
      )
      IORuntime.createDefaultPollingSystem()

  /** A patient system over Cats Effect's selector system, whatever the version: [[orDefault]] checks it. */
  private[unsafe] def apply(): PatientSelectorSystem = new PatientSelectorSystem(SelectorSystem())

  /**
   * Prints its first message and drops the others, of all the `Once` sharing `said`: a JVM that builds many
   * runtimes says it once.
   */
  private[unsafe] final class Once(print: String => Unit, said: AtomicBoolean = new AtomicBoolean(false))
      extends (String => Unit):
    def apply(message: String): Unit = if said.compareAndSet(false, true) then print(message)

  // whether this JVM has said it
  private val noticed = new AtomicBoolean(false)

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
