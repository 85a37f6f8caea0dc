package weir.runtime.internal

import cats.effect.unsafe.Scheduler

import java.time.Instant
import java.time.temporal.ChronoField
import java.util.concurrent.atomic.{AtomicLong, AtomicReference}
import java.util.concurrent.locks.LockSupport
import scala.concurrent.duration.FiniteDuration
import scala.util.control.NonFatal

/**
 * The timer thread of weir's runtime: one daemon thread that runs each timer's callback at or after its
 * deadline, for `IO.sleep`, `timeout` and the like.
 *
 * A thread that sets a timer pushes it onto a lock-free stack and, only when it falls due before the time
 * the timer thread is about to park until, unparks that thread. The timer thread alone owns the heap of
 * pending timers, so setting a timer takes one compare-and-set and no lock, and a thousand timers set at
 * once do not queue on a shared lock as they do in a `ScheduledThreadPoolExecutor`.
 *
 * A cancelled timer stays in the heap until its deadline, then is dropped; when cancelled timers are more
 * than half of a large heap, the timer thread sweeps them out, so a run of long timeouts that are cancelled
 * early holds no more than about twice the live ones.
 *
 * Callbacks run on the timer thread and must be short (Cats Effect's only resume a fiber on its compute
 * pool); one that throws is reported to `reportFailure` and the thread goes on.
 */
private[weir] final class TimerScheduler private (reportFailure: Throwable => Unit) extends Scheduler:
  import TimerScheduler.*

  private val incoming = new AtomicReference[Timer](null)
  // cancels counted since the last sweep; may count a few timers no longer in the heap (one cancelled
  // while it ran, or before the timer thread took it in), which only brings a sweep forward
  private val cancelled = new AtomicLong(0L)
  // The deadline the timer thread parks until; Long.MinValue while it is awake and will drain `incoming`
  // before it parks again. Read by setters to decide whether to unpark it.
  @volatile private var parkedUntil = Long.MinValue
  @volatile private var running = true
  private val heap = new TimerHeap
  private val thread = new Thread(() => loop(), "weir-timer")
  thread.setDaemon(true)

  def sleep(delay: FiniteDuration, task: Runnable): Runnable =
    val timer = new Timer(deadlineAfter(System.nanoTime(), delay.toNanos), task, this)
    var head = incoming.get()
    timer.next = head
    while !incoming.compareAndSet(head, timer) do
      head = incoming.get()
      timer.next = head
    val until = parkedUntil
    if until != Long.MinValue && timer.deadline < until then LockSupport.unpark(thread)
    timer

  def nowMillis(): Long = System.currentTimeMillis()

  override def nowMicros(): Long =
    val now = Instant.now()
    now.getEpochSecond * 1000000L + now.getLong(ChronoField.MICRO_OF_SECOND)

  def monotonicNanos(): Long = System.nanoTime()

  /** Timers set and not yet run, dropped or swept (the timer thread's view; for tests). */
  private[weir] def pending: Int = heap.size

  /** Waits up to `millis` for the timer thread to end after the stop; whether it has (for tests). */
  private[weir] def awaitStopped(millis: Long): Boolean =
    thread.join(millis)
    !thread.isAlive

  private[internal] def cancelledOne(): Unit =
    val _ = cancelled.incrementAndGet()

  private def shutdown(): Unit =
    running = false
    LockSupport.unpark(thread)

  private def loop(): Unit =
    while running do
      parkedUntil = Long.MinValue
      takeIncoming()
      sweepIfMostlyCancelled()
      runDue(System.nanoTime())
      val next = if heap.size == 0 then Long.MaxValue else heap.firstDeadline
      parkedUntil = next
      // a timer pushed after takeIncoming and before the write above saw the old parkedUntil and may not
      // have unparked this thread: look again before parking
      if incoming.get() == null && running then
        if next == Long.MaxValue then LockSupport.park(this)
        else
          val wait = next - System.nanoTime()
          if wait > 0L then LockSupport.parkNanos(this, wait)

  private def takeIncoming(): Unit =
    var timer = incoming.getAndSet(null)
    while timer != null do
      val next = timer.next
      timer.next = null
      if timer.task != null then heap.add(timer)
      timer = next

  private def runDue(now: Long): Unit =
    while heap.size > 0 && heap.firstDeadline <= now do
      val timer = heap.removeFirst()
      val task = timer.task
      timer.task = null
      if task != null then
        try task.run()
        catch case NonFatal(e) => reportFailure(e)

  private def sweepIfMostlyCancelled(): Unit =
    val gone = cancelled.get()
    if heap.size >= SweepAbove && gone * 2 > heap.size then
      val _ = cancelled.addAndGet(-gone)
      heap.removeCancelled()

private[weir] object TimerScheduler:

  private val SweepAbove = 1024

  // `now + delay`, where a negative delay is none and a sum past Long.MaxValue (a delay of centuries) is a
  // deadline never reached, not one in the past
  private[internal] def deadlineAfter(now: Long, delay: Long): Long =
    if delay <= 0L then now
    else
      val sum = now + delay
      if sum < now then Long.MaxValue else sum

  /** Starts a timer thread; the second value stops it (timers still pending never run). */
  def start(reportFailure: Throwable => Unit): (Scheduler, () => Unit) =
    val scheduler = new TimerScheduler(reportFailure)
    scheduler.thread.start()
    (scheduler, () => scheduler.shutdown())

  /** A timer: its deadline on `System.nanoTime`, its callback until it runs or is cancelled. */
  private[internal] final class Timer(val deadline: Long, task0: Runnable, owner: TimerScheduler)
      extends Runnable:
    @volatile var task: Runnable = task0
    var next: Timer = null // the incoming stack's link, written by the setter before its push

    /** Cancels: the callback will not run (if it has not begun). */
    def run(): Unit =
      if task != null then
        task = null
        owner.cancelledOne()
