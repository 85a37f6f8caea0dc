package weir.internal

import cats.effect.kernel.{Async, Deferred}
import cats.syntax.all.*
import fs2.Chunk
import weir.internal.Taker.Served

import scala.collection.immutable.Queue as ScalaQueue

/*
 * The state of one [[TaskBuffer]], swapped by compare-and-set in its [[UnsafeTaskBuffer]]. Every method is
 * a pure transition: it returns the next state and what the caller must do after the swap (hand entries to
 * takers, run a wake-up), never doing it, since it may run more than once under contention.
 *
 * Invariants: `size` counts the queued entries (`front`, `head.drop(pos)`, `rest`), `parked` those parked
 * behind claimed keys ([[KeyClaims]]), and an offer appends only what keeps size + parked <= capacity (an
 * entry a cancelled taker puts back can exceed it, by one per such taker: its place was freed when it was
 * handed out, and a producer may have filled it since); takers wait only while no queued entry is
 * claimable (or the ones there are left for spinners); producers wait for room as [[Offerers]] has it;
 * `next` is the input position of the next entry appended; `times` holds one reading per chunk of `head` and
 * `rest` when the run measures queue waits ([[EnqueueTimes]]).
 */
private[weir] final case class BufferState[F[_], A](
    capacity: Int,
    keyOf: Option[A => Any],
    front: List[Entry[A]] = Nil, // entries put back by cancelled takers, served first
    head: Chunk[A] = Chunk.empty,
    pos: Int = 0,
    headSeq: Long = 0L, // input position of head(0)
    rest: ScalaQueue[Chunk[A]] = ScalaQueue.empty[Chunk[A]],
    times: EnqueueTimes = EnqueueTimes.Off,
    size: Int = 0,
    claimed: KeyClaims.Claims[A] = KeyClaims.empty,
    parked: Int = 0,
    next: Long = 0L,
    takers: ScalaQueue[Taker[A]] = ScalaQueue.empty[Taker[A]],
    offerers: Offerers[F],
    closed: Boolean = false,
    stopped: Boolean = false,
    spinning: Int = 0 // takers spinning (see `TaskBuffer.spin`); as many queued entries are left for them
)(using F: Async[F]):
  import BufferState.*

  def finished: Boolean = stopped || (closed && size == 0)

  def free: Int = capacity - size - parked

  /**
   * Appends what fits and serves waiting takers, as long as either makes progress; registers `space` (if
   * given) when some of the chunk is left over. `now` is when it is appended, if the run measures queue
   * waits (otherwise unread).
   * An offer not `resumed` (woken from a wait for room) queues while a producer is ahead ([[Offerers]]).
   */
  def append(
      chunk: Chunk[A],
      space: Option[Deferred[F, Unit]],
      now: Long,
      resumed: Boolean
  ): (BufferState[F, A], Appended[A]) =
    if stopped then (this, Appended(Nil, 0, 0, refused = true))
    else if !resumed && offerers.ahead then
      (space.fold(this)(d => copy(offerers = offerers.queued(d))), Appended(Nil, 0, 0, false))
    else
      var s = if resumed then copy(offerers = offerers.appended) else this
      var served: Served[A] = Nil
      var accepted = 0
      var progress = true
      while progress do
        val stored = math.min(chunk.size - accepted, s.free)
        if stored > 0 then
          s = s.enqueue(chunk.drop(accepted).take(stored), now)
          accepted += stored
        val (next, more) = s.serveTakers
        s = next
        served = more ::: served
        progress = stored > 0 && accepted < chunk.size
      val waiting = space match
        case Some(d) if accepted < chunk.size =>
          s.copy(offerers = if resumed then s.offerers.requeuedFirst(d) else s.offerers.queued(d))
        case _ => s
      (waiting, Appended(served, accepted, math.max(0, s.size - size), refused = false))

  private def enqueue(c: Chunk[A], now: Long): BufferState[F, A] =
    if size == 0 && front.isEmpty then
      copy(
        head = c,
        pos = 0,
        headSeq = next,
        rest = ScalaQueue.empty,
        times = times.appended(now, asHead = true),
        size = c.size,
        next = next + c.size
      )
    else
      copy(
        rest = rest.enqueue(c),
        times = times.appended(now, asHead = false),
        size = size + c.size,
        next = next + c.size
      )

  /** Hands claimable queued entries to waiting takers, in order, leaving `spinning` entries for spinners. */
  private def serveTakers: (BufferState[F, A], Served[A]) =
    var s = this
    var served: Served[A] = Nil
    while s.takers.nonEmpty && s.size > s.spinning do
      s.popClaimable match
        case (popped, entry: Entry[A]) =>
          val (taker, more) = popped.takers.dequeue
          s = popped.copy(takers = more)
          served = (taker, entry) :: served
        case (popped, _) => s = popped
    (s, served)

  /** Takes an entry if one is claimable; else becomes a spinner if there is room for one. */
  def takeOrSpin: (BufferState[F, A], TakeResult[F, A]) =
    take(None) match
      case (s, MustWait) if s.spinning < MaxSpinners => (s.copy(spinning = s.spinning + 1), Spin)
      case other => other

  /** A spinner looks again: it stops spinning if it gets an entry or the buffer is finished. */
  def spinAgain: (BufferState[F, A], TakeResult[F, A]) =
    take(None) match
      case (s, MustWait) => (s, MustWait)
      case (s, Taken(entry, wake)) =>
        val (served, wakes) = s.unspin
        (served, Taken(entry, wake *> wakes))
      case (s, other) => (s.copy(spinning = s.spinning - 1), other)

  /** A spinner leaves: the entry left for it goes to a parked taker, if any. */
  def unspin: (BufferState[F, A], F[Unit]) =
    val (s, served) = copy(spinning = spinning - 1).serveTakers
    val (after, wake) = s.wakeOfferer // serving freed places
    (after, F.delay(Taker.handOver(served)) *> wake)

  /** Takes an entry if one is claimable, else registers `taker` to be handed the next one. */
  def takeOrWait(taker: Taker[A]): (BufferState[F, A], TakeResult[F, A]) = take(Some(taker))

  /** Takes a claimable entry if taking it wakes no producer; else stays as it is ([[TakeLater]]). */
  def takeIfFree: (BufferState[F, A], Took[A]) =
    if stopped || size == 0 then (this, TakeLater)
    else
      popClaimable match
        case taken @ (s, _: Entry[A]) if !s.offererFits => taken
        case _ => (this, TakeLater)

  /**
   * [[takeIfFree]]'s commonest case with nothing allocated but the next state: no key function, nothing put
   * back, the oldest entry in the head chunk, and no producer to wake by taking it. The task taken is
   * `head(pos)` of this state. Returns this very state when the case does not apply.
   */
  def takeFromHead: BufferState[F, A] =
    if stopped || keyOf.isDefined || front.nonEmpty || pos >= head.size then this
    else
      val next = copy(pos = pos + 1, size = size - 1)
      if next.offererFits then this else next

  private def offererFits: Boolean = offerers.due(free)

  private def take(waiter: Option[Taker[A]]): (BufferState[F, A], TakeResult[F, A]) =
    if stopped then (this, Finished)
    else
      popClaimable match
        case (s, entry: Entry[A]) =>
          val (after, wake) = s.wakeOfferer
          (after, Taken(entry, wake))
        case (s, _) =>
          if closed then (s, Finished)
          else
            waiter match
              case None => (s, MustWait)
              case Some(t) => (s.copy(takers = s.takers.enqueue(t)), MustWait)

  /**
   * Pops queued entries until one whose key is free (claiming it), parking the others; returns the state
   * after the pops and the entry claimed, or [[TakeLater]] when none was. One copy of the state however
   * many entries it pops, and no wrapper around it: this runs on every take.
   */
  private def popClaimable: (BufferState[F, A], Took[A]) = popClaimable(releasing = null)

  /**
   * [[popClaimable]] for the claimant of `releasing` (null: none), a key with nothing parked behind it that
   * its claimant is done with: that key is free to the entries popped, and its claim passes to the entry
   * taken in one change of the claims; it is released if no entry with a key is taken.
   */
  private def popClaimable(releasing: Any): (BufferState[F, A], Took[A]) =
    var front = this.front
    var head = this.head
    var pos = this.pos
    var headSeq = this.headSeq
    var rest = this.rest
    var times = this.times
    var size = this.size
    var claimed = this.claimed
    var parked = this.parked
    var handing = releasing
    var found: Entry[A] = null // none yet: a local sentinel, so that a take allocates no `Option`
    while found == null && size > 0 do
      val e = front match
        case put :: more =>
          front = more
          put
        case Nil =>
          if pos >= head.size then // the head chunk is used up: the next one becomes the head
            val (c, more) = rest.dequeue
            headSeq += pos
            head = c
            pos = 0
            rest = more
            times = times.nextHead
          val queued = entryOf(times, headSeq + pos, head(pos))
          pos += 1
          queued
      size -= 1
      if !e.keyed then found = e
      else
        val queue = if e.key == handing then null else KeyClaims.behind(claimed, e.key)
        if queue == null then
          claimed =
            if handing == null then KeyClaims.claim(claimed, e.key)
            else KeyClaims.handOver(claimed, handing, e.key)
          handing = null
          found = e
        else
          claimed = KeyClaims.park(claimed, e, queue)
          parked += 1
    if handing != null then claimed = KeyClaims.advance(claimed, handing, KeyReleased)
    val s =
      if size == this.size && (claimed eq this.claimed) then this
      else
        copy(
          front = front,
          head = head,
          pos = pos,
          headSeq = headSeq,
          rest = rest,
          times = times,
          size = size,
          claimed = claimed,
          parked = parked
        )
    (s, if found == null then TakeLater else found)

  private def entryOf(times: EnqueueTimes, seq: Long, task: A): Entry[A] =
    keyOf match
      case None => times.entry(seq, task, null)
      case Some(f) =>
        val key =
          try f(task)
          catch case scala.util.control.NonFatal(e) => KeyFailure(e)
        times.entry(seq, task, key)

  /** Wakes the first waiting producer if a wake-up is due ([[Offerers.due]]): after takes, appends, cancels. */
  def wakeOfferer: (BufferState[F, A], F[Unit]) =
    offerers.wake(free) match
      case Some((rest, first)) => (copy(offerers = rest), first.complete(()).void)
      case None => (this, F.unit)

  /** A wait for room on `space` was cancelled ([[Offerers.forgotten]]); the next producer may go. */
  def forgetOfferer(space: Deferred[F, Unit]): (BufferState[F, A], F[Unit]) =
    copy(offerers = offerers.forgotten(space)).wakeOfferer

  /** Hands the entry parked first behind `key` on to its claimant, or releases the key; stopped: neither. */
  private def handOnKey(key: Any): (BufferState[F, A], KeyTurn[A]) =
    if stopped then (this, KeyReleased)
    else
      KeyClaims.next(claimed, key) match
        case KeyReleased => (copy(claimed = KeyClaims.advance(claimed, key, KeyReleased)), KeyReleased)
        case turn => (copy(claimed = KeyClaims.advance(claimed, key, turn), parked = parked - 1), turn)

  /**
   * [[finishKey]] when it wakes no producer; [[KeyTurnLater]] and no change when it would. With `andTake`,
   * a key released (nothing parked behind it) is followed in the same step by its claimant's next take, as
   * [[takeIfFree]] would make it: the entry taken (its key claimed) is returned instead of [[KeyReleased]],
   * which then means that nothing was taken.
   */
  def finishKeyQuietly(key: Any, andTake: Boolean): (BufferState[F, A], KeyTurn[A]) =
    if stopped then (this, KeyReleased)
    else
      KeyClaims.next(claimed, key) match
        case KeyReleased =>
          // the common case of a per-key task: one copy of the state for the release and the take
          if !andTake || size == 0 then
            (copy(claimed = KeyClaims.advance(claimed, key, KeyReleased)), KeyReleased)
          else
            popClaimable(releasing = key) match
              case (s, entry: Entry[A]) if !s.offererFits => (s, entry)
              case (s, TakeLater) => (s, KeyReleased) // released by the pop
              case _ => (copy(claimed = KeyClaims.advance(claimed, key, KeyReleased)), KeyReleased)
        case turn =>
          val next = copy(claimed = KeyClaims.advance(claimed, key, turn), parked = parked - 1)
          if next.offererFits then (this, KeyTurnLater) else (next, turn)

  /** The claimant of `key` is done with an entry: the next one parked behind it, or `None` (released). */
  def finishKey(key: Any): (BufferState[F, A], F[Option[Entry[A]]]) =
    handOnKey(key) match
      case (next, e: Entry[A]) =>
        val (after, wake) = next.wakeOfferer // an entry handed on frees a place
        (after, wake.as(Some(e)))
      case (next, _) => (next, F.pure(None))

  /** A cancelled taker's entry goes back, with the entries parked behind its key, and is served again. */
  def putBack(e: Entry[A]): (BufferState[F, A], Served[A]) =
    val (claims, behind) = KeyClaims.release(claimed, e)
    val back = copy(
      front = e :: behind ++ front,
      size = size + 1 + behind.size,
      claimed = claims,
      parked = parked - behind.size
    )
    if stopped then (back, Nil) else back.serveTakers

  def tasks: Vector[A] =
    // the common case at a run's end, which runs once per run and so mostly before the JIT compiles it
    if size == 0 && parked == 0 then Vector.empty
    else
      front.map(_.task).toVector ++ head.drop(pos).toVector ++ rest.iterator.flatMap(_.iterator) ++
        KeyClaims.tasks(claimed)

  def cleared: BufferState[F, A] =
    copy(
      front = Nil,
      head = Chunk.empty,
      pos = 0,
      headSeq = next,
      rest = ScalaQueue.empty,
      times = EnqueueTimes(measured = times ne EnqueueTimes.Off),
      size = 0,
      claimed = KeyClaims.empty,
      parked = 0
    )

private[weir] object BufferState:

  /** An empty buffer: every field but these at its default; `measured`: it keeps [[EnqueueTimes]]. */
  def empty[F[_]: Async, A](capacity: Int, keyOf: Option[A => Any], measured: Boolean): BufferState[F, A] =
    BufferState[F, A](capacity, keyOf, times = EnqueueTimes(measured), offerers = Offerers.none(capacity))

  /** What an append did: takers to hand entries to, entries accepted, of those how many no taker got. */
  final case class Appended[A](served: Served[A], accepted: Int, unserved: Int, refused: Boolean)

  // the results without fields are single objects: a take allocates no result unless it took something
  sealed trait TakeResult[+F[_], +A]
  final case class Taken[F[_], A](entry: Entry[A], wake: F[Unit]) extends TakeResult[F, A]
  case object Finished extends TakeResult[Nothing, Nothing]
  case object MustWait extends TakeResult[Nothing, Nothing]
  case object Spin extends TakeResult[Nothing, Nothing]

  /** Takers that may spin at once. */
  val MaxSpinners = 1
