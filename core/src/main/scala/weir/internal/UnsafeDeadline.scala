package weir.internal

import java.util.concurrent.atomic.AtomicLong
import scala.annotation.tailrec

/**
 * The deadline of the attempt a worker runs, shared by the worker and its standby, the one timer a worker
 * of a run with a task timeout keeps ([[DeadlineTimer]]). The worker arms it as an attempt starts and
 * disarms it as the attempt ends, each a plain write and a compare-and-set; the standby looks at it when
 * it wakes ([[look]]), sleeps until the deadline armed, parks while none is, and fires it when the attempt
 * armed has run past its deadline.
 *
 * The race it settles, by compare-and-set on its state, is an attempt's end against its deadline: whichever
 * comes first decides. The end first ([[disarm]] is true): the attempt's result stands, and the standby,
 * which finds a later deadline or none when it wakes, fires nothing. The deadline first ([[look]] answers
 * [[UnsafeDeadline.Look.Fired]]): the standby owns the attempt's end from then on, the worker's fiber is to
 * be cancelled, and a worker whose attempt ends meanwhile (its [[disarm]] is false) waits for that
 * cancellation, so that it can only ever land on the attempt it was meant for.
 *
 * The state is one `Long`: a round, counted up by every arming, and a tag. Firing compares the round seen
 * with the deadline, so an attempt that ended and was followed by another is never fired for the first's
 * deadline. Only the worker arms, disarms and closes; only the standby parks and fires.
 */
private[weir] final class UnsafeDeadline extends AtomicLong(UnsafeDeadline.Tag.Idle):
  import UnsafeDeadline.*

  // the armed attempt's deadline (monotonic nanoseconds), written before the state that publishes it
  @volatile private var at: Long = 0L
  // the parked standby's wake-up, written before the state that says it is parked
  @volatile private var wake: Either[Throwable, Unit] => Unit = scala.compiletime.uninitialized

  /** An attempt starts, to end by `deadline` (monotonic nanoseconds); wakes a parked standby. Worker only. */
  @tailrec def arm(deadline: Long): Unit =
    at = deadline
    val s = get
    if compareAndSet(s, ((s >>> Bits) + 1) << Bits | Tag.Armed) then
      if (s & Mask) == Tag.Parked then wake(Ready)
    else arm(deadline) // the standby parked meanwhile

  /**
   * The armed attempt ended: true if that came first; false if its deadline did (the standby fired it, and
   * the worker's fiber is being cancelled: the worker must wait for that). Worker only.
   */
  def disarm(): Boolean =
    val s = get
    // only the standby changes an armed state, to fired: a failed swap means it fired
    (s & Mask) == Tag.Armed && compareAndSet(s, (s & ~Mask) | Tag.Idle)

  /**
   * The worker leaves: no deadline fires any more, and a parked standby is woken to leave too. False if the
   * standby fired the attempt armed first (it owns that attempt's end). Worker only; idempotent.
   */
  @tailrec def close(): Boolean =
    val s = get
    (s & Mask) match
      case Tag.Fired => false
      case Tag.Closed => true
      case tag =>
        if compareAndSet(s, (s & ~Mask) | Tag.Closed) then
          if tag == Tag.Parked then wake(Ready)
          true
        else close()

  /** What the standby does, at monotonic time `now`: see [[UnsafeDeadline.Look]]. Standby only. */
  @tailrec def look(now: Long): Look =
    val s = get
    (s & Mask) match
      case Tag.Armed =>
        val deadline = at // if the worker armed again since `s`, the swap below fails and we look again
        if now - deadline < 0 then Look.Sleep(deadline - now)
        else if compareAndSet(s, (s & ~Mask) | Tag.Fired) then Look.Fired
        else look(now)
      case Tag.Closed => Look.Closed
      case Tag.Fired => Look.Fired
      case _ => Look.Park

  /**
   * Parks the standby until the worker arms or closes: `resume` is called then, or at once if the worker
   * did so since the standby's last [[look]]. Standby only.
   */
  def park(resume: Either[Throwable, Unit] => Unit): Unit =
    wake = resume
    val s = get
    if (s & Mask) != Tag.Idle || !compareAndSet(s, (s & ~Mask) | Tag.Parked) then resume(Ready)

private[weir] object UnsafeDeadline:
  private val Bits = 3
  private val Mask = (1L << Bits) - 1
  private val Ready: Either[Throwable, Unit] = Right(())

  // the tags of the state's low bits
  private[UnsafeDeadline] object Tag:
    val Idle = 0L // no attempt armed
    val Armed = 1L // an attempt runs, to end by `at`
    val Fired = 2L // the armed attempt ran past its deadline: the standby owns its end
    val Parked = 3L // no attempt armed, and the standby waits for one
    val Closed = 4L // the worker left

  /** What the standby is to do when it looks at the deadline. */
  sealed trait Look

  object Look:
    /** An attempt runs, to end in `nanos`: sleep until then, and look again. */
    final case class Sleep(nanos: Long) extends Look

    /** No attempt runs: park ([[UnsafeDeadline.park]]), and look again once woken. */
    case object Park extends Look

    /** The attempt armed ran past its deadline: cancel the worker and take its place. */
    case object Fired extends Look

    /** The worker left: the standby leaves too. */
    case object Closed extends Look
