package weir.internal

import cats.effect.kernel.Async
import cats.syntax.all.*
import fs2.Chunk

import scala.collection.immutable.Queue as ScalaQueue

/*
 * The state of one [[TaskBuffer]], swapped by compare-and-set in its [[UnsafeTaskBuffer]]. Every method is
 * a pure transition: it returns the next state and what the caller must do after the swap (hand entries to
 * takers, run a wake-up), never doing it, since it may run more than once under contention.
 *
 * By concern: this file holds the fields, the queue's one pop ([[popClaimable]]) and what every concern
 * shares; the offers are in [[BufferOffers]], the takes in [[BufferTakes]], the keys' hand-on in
 * [[BufferKeys]].
 *
 * Invariants: `size` counts the queued entries (`front`, `head.drop(pos)`, `rest`), `parked` those parked
 * behind claimed keys ([[KeyClaims]]), and an offer appends only what keeps size + parked <= capacity (an
 * entry a cancelled taker puts back can exceed it, by one per such taker: its place was freed when it was
 * handed out, and a producer may have filled it since); takers wait only while no queued entry is
 * claimable, the ones there are left for spinners, or a link of the wake chain that will reach them is
 * under way ([[BufferTakes.relay]]); producers wait for room as [[Offerers]] has it;
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
) extends BufferOffers[F, A],
      BufferTakes[F, A],
      BufferKeys[F, A]:

  def finished: Boolean = stopped || (closed && size == 0)

  def free: Int = capacity - size - parked

  /** Whether a waiting producer is due a wake-up in this state ([[Offerers.due]]). */
  def offererDue: Boolean = offerers.due(free)

  /** Wakes the first waiting producer if a wake-up is due ([[Offerers.due]]): after takes, appends, cancels. */
  def wakeOfferer(using F: Async[F]): (BufferState[F, A], F[Unit]) =
    offerers.wake(free) match
      case Some((rest, first)) => (copy(offerers = rest), first.complete(()).void)
      case None => (this, F.unit)

  /**
   * Pops queued entries until one whose key is free (claiming it), parking the others; returns the state
   * after the pops and the entry claimed, or [[Later]] when none was. One copy of the state however many
   * entries it pops, and no wrapper around it: this runs on every take.
   *
   * `releasing` ([[NoKey]]: none) is a key with nothing parked behind it that its claimant is done with:
   * that key is free to the entries popped, and its claim passes to the entry taken in one change of the
   * claims; it is released if no entry with a key is taken.
   */
  private[internal] def popClaimable(releasing: Any): (BufferState[F, A], Handout[A]) =
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
    var found: Handout[A] = Later // none yet: a take allocates no `Option`
    while (found eq Later) && size > 0 do
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
        val handingOn = isKey(handing)
        // the key being released is free to the entry popped, without a look in the claims
        (if handingOn && e.key == handing then None else KeyClaims.behind(claimed, e.key)) match
          case None =>
            claimed = if handingOn then KeyClaims.handOver(claimed, handing, e.key)
            else KeyClaims.claim(claimed, e.key)
            handing = NoKey
            found = e
          case Some(queue) =>
            claimed = KeyClaims.park(claimed, e, queue)
            parked += 1
    if isKey(handing) then claimed = KeyClaims.advance(claimed, handing, Released)
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
    (s, found)

  private def isKey(k: Any): Boolean = k.asInstanceOf[AnyRef] ne NoKey

  private def entryOf(times: EnqueueTimes, seq: Long, task: A): Entry[A] =
    keyOf match
      case None => times.entry(seq, task, NoKey)
      case Some(f) =>
        val key =
          try f(task)
          catch case scala.util.control.NonFatal(e) => KeyFailure(e)
        times.entry(seq, task, key)

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
  def empty[F[_], A](capacity: Int, keyOf: Option[A => Any], measured: Boolean): BufferState[F, A] =
    BufferState[F, A](capacity, keyOf, times = EnqueueTimes(measured), offerers = Offerers.none(capacity))

  /** What an append did: takers to hand entries to, entries accepted, of those how many no taker got. */
  final case class Appended[A](served: Taker.Served[A], accepted: Int, unserved: Int, refused: Boolean)

  /** The shell's answer to a take: the [[Handout]], and the wake-up to run once the state is swapped. */
  type Answer[F[_], A] = (Handout[A], F[Unit])

  /** Takers that may spin at once. */
  val MaxSpinners = 1
