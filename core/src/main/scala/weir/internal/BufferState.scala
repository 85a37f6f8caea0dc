package weir.internal

import cats.effect.kernel.Async
import cats.syntax.all.*
import fs2.Chunk

import scala.collection.mutable.ArrayDeque

/*
 * The state of one [[TaskBuffer]], held by its [[UnsafeTaskBuffer]] and changed only under that buffer's lock.
 * Every method is a transition made under the lock: it changes the state in place and returns what the caller
 * must do once the lock is released (hand entries to takers, run a wake-up), never doing it, since nothing
 * that can block or call out runs under the lock.
 *
 * By concern: this file holds the fields, the queue's one pop ([[popClaimable]]) and what every concern
 * shares; the offers are in [[BufferOffers]], the takes in [[BufferTakes]], the keys' hand-on in
 * [[BufferKeys]].
 *
 * Invariants: `size` counts the queued entries (`front`, `head.drop(pos)`, `rest`), `parked` those parked
 * behind claimed keys ([[UnsafeKeyClaims]]), `lent` the places lent to the producer's [[UnsafeInlet]] (its
 * credit and what it placed there, not yet queued), and an offer appends only what keeps
 * size + parked + lent <= capacity (an entry a cancelled taker puts back can exceed it, by one per such taker:
 * its place was freed when it was handed out, and a producer may have filled it since); what the inlet holds
 * is queued, behind everything queued before, by the first transition that finds the queue empty or appends;
 * takers wait only while no queued or placed entry is claimable, the ones there are left for spinners, a link
 * of the wake chain that will reach them is under way ([[BufferTakes.relay]]), or the producer that placed one
 * will serve them ([[starving]]); producers wait for room as [[Offerers]] has it;
 * `next` is the input position of the next entry appended; `times` holds one reading per chunk of `head` and
 * `rest` when the run measures queue waits ([[EnqueueTimes]]).
 */
private[weir] final class BufferState[F[_], A](
    val capacity: Int,
    val keyOf: Option[A => Any],
    val measured: Boolean
) extends BufferOffers[F, A],
      BufferTakes[F, A],
      BufferKeys[F, A]:

  private[internal] var front: List[Entry[A]] = Nil // entries put back by cancelled takers, served first
  private[internal] var head: Chunk[A] = Chunk.empty
  private[internal] var pos = 0
  private[internal] var headSeq = 0L // input position of head(0)
  // the chunks after `head`, changed in place (an append allocates no node); its array shrinks as it empties
  private[internal] val rest = new ArrayDeque[Chunk[A]]
  private[internal] var times = EnqueueTimes(measured)
  private[internal] var size = 0
  private[internal] val claimed = new UnsafeKeyClaims[A]
  private[internal] var parked = 0
  private[internal] var next = 0L
  // changed in place, like `rest`; its `size`, read on every append that leaves entries queued, is a field
  private[internal] val takers = new ArrayDeque[UnsafeTaker[A]]
  private[internal] var parks = 0L // takers that found nothing and parked, since the run began
  private[internal] var offerers = Offerers.none[F](capacity)
  private[internal] var closed = false
  private[internal] var stopped = false
  private[internal] var spinning =
    0 // takers spinning (see `TaskBuffer.spin`); as many queued entries are left for them
  // the single producer's lane ([[UnsafeInlet]]), and the places lent to it: credit unspent, elements undrained
  private[internal] val inlet = new UnsafeInlet[A]
  private[internal] var lent = 0
  // `inlet.hungry` as last written here, read at every unlock instead of the line the producer writes
  private[internal] var raised = false
  // `hungry` was raised and no look at the inlet a moment later is under way for it yet ([[armRecheck]])
  private[internal] var recheckDue = false
  private[internal] var rechecking = false

  def finished: Boolean = stopped || (closed && size == 0)

  def free: Int = capacity - size - parked - lent

  /** Elements held: queued (what the producer placed in the inlet included) and parked. */
  def held: Int =
    absorb(): Unit
    size + parked

  /** Moves what the producer placed in the [[inlet]] into the queue, in order; whether there was any. */
  def absorb(): Boolean =
    val placed = inlet.drain()
    if placed.isEmpty then false
    else
      if !inlet.closed then lent -= placed.size // a placement that raced the close was lent nothing since
      enqueue(placed, 0L) // a run that measures queue waits lends no place
      true

  /**
   * Takers are parked and none spins: an element the producer places must be served to them under the lock
   * ([[UnsafeInlet.hungry]], which is lowered when this turns false, and raised, before a look at the inlet,
   * where it turns true: a taker parking, the last spinner leaving).
   */
  def starving: Boolean = takers.nonEmpty && spinning == 0

  /** Raises the inlet's `hungry`; a look at the inlet must follow, and, if takers starve, a recheck. */
  def raise(): Unit =
    if !raised then recheckDue = true
    raised = true
    inlet.hungry = true

  def lower(): Unit =
    raised = false
    recheckDue = false
    inlet.hungry = false

  /**
   * Whether the caller must start a [[recheck]] after this transition: `hungry` was raised, takers starve, the
   * producer holds lent places (else it can place nothing), and no recheck is under way. A placement made as
   * `hungry` went up may have missed it and not been seen by the look that followed ([[UnsafeInlet]]); at most
   * one recheck is under way at a time.
   */
  def armRecheck(): Boolean =
    if recheckDue && starving && lent > 0 && !rechecking then
      recheckDue = false
      rechecking = true
      true
    else false

  /**
   * The look a moment after takers started starving: what was placed is queued and, if parked takers could
   * take it, the first of them is woken to look again. It hands no entry over: the recheck runs in a fiber that
   * is not a worker, and an entry in flight there could miss the collection of what the buffer holds.
   */
  def recheck(using F: Async[F]): F[Unit] =
    rechecking = false
    absorb(): Unit
    if stopped || !relayDue then F.unit
    else
      val woken = takers.removeHead(resizeInternalRepr = true)
      F.delay(woken.lookAgain())

  /** No more placements: the inlet closes, what it holds is queued, and no place stays lent. */
  def shut(): Unit =
    inlet.close()
    absorb(): Unit
    lent = 0

  /** Whether a waiting producer is due a wake-up in this state ([[Offerers.due]]). */
  def offererDue: Boolean = offerers.due(free)

  /** Wakes the first waiting producer if a wake-up is due ([[Offerers.due]]): after takes, appends, cancels. */
  def wakeOfferer(using F: Async[F]): F[Unit] =
    offerers.wake(free) match
      case Some((waiting, first)) =>
        offerers = waiting
        first.complete(()).void
      case None => F.unit

  /**
   * Pops queued entries until one whose key is free (claiming it), parking the others; returns the entry
   * claimed, or [[Later]] when none was. Allocates nothing but the entry: this runs on every take.
   *
   * `releasing` ([[NoKey]]: none) is a key with nothing parked behind it that its claimant is done with:
   * that key is free to the entries popped, and its claim passes to the entry taken in one change of the
   * claims; it is released if no entry with a key is taken.
   */
  private[internal] def popClaimable(releasing: Any): Handout[A] =
    var handing = releasing
    var found: Handout[A] = Later // none yet: a take allocates no `Option`
    while (found eq Later) && (size > 0 || absorb()) do
      val e = front match
        case put :: more =>
          front = more
          put
        case Nil =>
          if pos >= head.size then // the head chunk is used up: the next one becomes the head
            headSeq += pos
            head = rest.removeHead(resizeInternalRepr = true)
            pos = 0
            times = times.nextHead
          val queued = entryOf(headSeq + pos, head(pos))
          pos += 1
          queued
      size -= 1
      if !e.keyed then found = e
      // the key being released is free to the entry popped, without a look in the claims: it keeps the claim
      else if isKey(handing) && e.key == handing then
        handing = NoKey
        found = e
      else if claimed.tryClaim(e.key) then
        if isKey(handing) then claimed.unclaim(handing) // claimed first: the claims hold both for a moment
        handing = NoKey
        found = e
      else
        claimed.park(e)
        parked += 1
    if isKey(handing) then claimed.unclaim(handing)
    found

  private def isKey(k: Any): Boolean = k.asInstanceOf[AnyRef] ne NoKey

  private def entryOf(seq: Long, task: A): Entry[A] =
    keyOf match
      case None => times.entry(seq, task, NoKey)
      case Some(f) =>
        val key =
          try f(task)
          catch case scala.util.control.NonFatal(e) => KeyFailure(e)
        times.entry(seq, task, key)

  def tasks: Vector[A] =
    absorb(): Unit
    // the common case at a run's end, which runs once per run and so mostly before the JIT compiles it
    if size == 0 && parked == 0 then Vector.empty
    else
      front.map(_.task).toVector ++ head.drop(pos).toVector ++ rest.iterator.flatMap(_.iterator) ++
        claimed.tasks

  /** Empties the buffer (after [[tasks]] collected what it held). */
  def clear(): Unit =
    front = Nil
    head = Chunk.empty
    pos = 0
    headSeq = next
    rest.clear()
    times = EnqueueTimes(measured)
    size = 0
    claimed.clear()
    parked = 0

private[weir] object BufferState:

  /** What an append did: takers to hand entries to, entries accepted, of those how many no taker got. */
  final case class Appended[A](served: UnsafeTaker.Served[A], accepted: Int, unserved: Int, refused: Boolean)

  /** The shell's answer to a take: the [[Handout]], and the wake-up to run once the state is swapped. */
  type Answer[F[_], A] = (Handout[A], F[Unit])

  /**
   * Takers that may spin at once: two, so that while one runs the entry it caught, the other is looking
   * when the next one arrives (with one, each entry that arrives while the spinner is away wakes a parked
   * taker).
   */
  val MaxSpinners = 2
