package weir.internal

import cats.effect.kernel.Async
import cats.syntax.all.*
import weir.internal.BufferState.{Answer, MaxSpinners}
import weir.internal.UnsafeTaker.Served

/**
 * The takes of a [[BufferState]]: one transition, [[take]], that every take shares — the plain one
 * ([[UnsafeTaskBuffer.tryTake]], which makes it only when it wakes no producer) and the shell's (which
 * spins, registers a parked taker, and wakes the producer the take lets in) — and the takers: serving the
 * parked ones, the spinners, an entry a cancelled taker gives back. Transitions under the buffer's lock.
 */
private[weir] trait BufferTakes[F[_], A]:
  self: BufferState[F, A] =>

  /**
   * The take: the oldest claimable entry (its key claimed for the taker); [[Finished]] when the buffer will
   * hand out nothing more; [[Wait]] when nothing is claimable now. Entries popped on the way are parked
   * behind their keys. It wakes no producer: its caller decides.
   */
  def take: Handout[A] =
    if stopped then Finished
    else
      popClaimable(releasing = NoKey) match
        case e: Entry[A] => e
        case _ => if closed then Finished else Wait

  /** The shell's take: an entry, with the wake-up of the producer it lets in; else what [[take]] says. */
  private def answered(using F: Async[F]): Answer[F, A] =
    take match
      case e: Entry[A] => (e, wakeOfferer)
      case other => (other, F.unit)

  /** Takes an entry if one is claimable; else becomes a spinner ([[Spin]]) if there is room for one. */
  def takeOrSpin(using F: Async[F]): Answer[F, A] =
    answered match
      case (Wait, _) if spinning < MaxSpinners =>
        spinning += 1
        (Spin, F.unit)
      case other => other

  /** A spinner looks again: it stops spinning if it gets an entry or the buffer is finished. */
  def spinAgain(using F: Async[F]): Answer[F, A] =
    answered match
      case waiting @ (Wait, _) => waiting
      case (e: Entry[A], wake) =>
        val wakes = unspin
        (e, wake *> wakes)
      case other =>
        spinning -= 1
        other

  /** A spinner leaves: the entry left for it goes to a parked taker, if any, who relays (see [[relay]]). */
  def unspin(using F: Async[F]): F[Unit] =
    spinning -= 1
    if starving then
      raise() // before the look: see `UnsafeInlet`
      absorb(): Unit
    relay

  /**
   * One link of the wake chain: hands the oldest claimable queued entry, beyond those left for spinners, to
   * the first parked taker. Made by whoever got an entry after waiting for one (a parked taker woken with
   * it, a spinner) and by every append, so that a burst of entries wakes parked takers one after another,
   * each woken one waking the next as it resumes, while the takers already running take entries without a
   * wake-up: a burst wakes as many takers as take entries before the burst is used up, not one per entry.
   * Liveness: while a parked taker and a claimable entry coexist, a taker handed an entry has yet to
   * resume (and relay), a spinner has yet to look, or an entry given back has yet to be served again, each
   * of which relays.
   */
  def relay(using F: Async[F]): F[Unit] =
    val served = serveTakers(1)
    val wake = wakeOfferer // serving freed a place
    if served.isEmpty then wake else F.delay(UnsafeTaker.handOver(served)) *> wake

  /** Whether [[relay]] could hand an entry over: a parked taker, and a queued entry beyond the spinners'. */
  def relayDue: Boolean = takers.nonEmpty && size > spinning

  /** Takes an entry if one is claimable, else registers `taker` to be handed the next one ([[Wait]]). */
  def takeOrWait(taker: UnsafeTaker[A])(using F: Async[F]): Answer[F, A] =
    // set before the take reads the inlet: a placement that reads it after that is served by its producer, and
    // one that raced it by the recheck the caller starts ([[armRecheck]])
    raise()
    answered match
      case waiting @ (Wait, _) =>
        takers.append(taker)
        parks += 1
        waiting
      case other => other

  /**
   * Hands claimable queued entries to waiting takers, in order, at most `most` of them, leaving `spinning`
   * entries for spinners.
   */
  private[internal] def serveTakers(most: Int): Served[A] =
    var served: Served[A] = Nil
    var left = most
    while left > 0 && takers.nonEmpty && size > spinning do
      popClaimable(releasing = NoKey) match
        case entry: Entry[A] =>
          served = (takers.removeHead(resizeInternalRepr = true), entry) :: served
          left -= 1
        case _ => ()
    served

  /**
   * A cancelled taker's entry goes back, with the entries parked behind its key, and is served again, to one
   * parked taker who relays ([[relay]]).
   */
  def putBack(e: Entry[A]): Served[A] =
    val behind = claimed.release(e)
    front = e :: behind ++ front
    size += 1 + behind.size
    parked -= behind.size
    if stopped then Nil else serveTakers(1)
