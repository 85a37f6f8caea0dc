package weir.internal

import cats.effect.kernel.{Async, Deferred, Poll}
import cats.effect.syntax.all.*
import cats.syntax.all.*
import fs2.Chunk

import java.util.concurrent.atomic.AtomicReference
import scala.collection.immutable.Queue as ScalaQueue

/**
 * The bounded buffer between producers and workers: FIFO, counted in elements (never in chunks), at
 * most `capacity` elements held. Each element is numbered in the order it entered (its input
 * position), which [[weir.Ordering.inputOrder]] relies on.
 *
 * Life cycle: open → `close` (no more offers; takers drain what is left, then see `None`) or `stop`
 * (no more takes; everything still held is collected by `remaining`). Both wake every waiter.
 *
 * Per-key admission ([[weir.Ordering.byKey]]): with a key function, taking an element *claims* its key;
 * an element whose key is claimed is parked behind it instead of being handed out, and the claimant
 * gets the parked elements one by one from [[finishKey]]. Parked elements keep their places (the
 * capacity counts them) until they are handed out. Claiming happens inside the same state change as
 * the take, so elements of one key are always handed out in input order. Only keys that are claimed
 * have an entry, so the bookkeeping is bounded by the number of workers, not by the number of keys.
 *
 * Waiting takers are callbacks ([[TaskBuffer.Taker]]), so handing an element to one is a plain call and
 * a producer's fast path ([[tryOfferNow]]) needs no effect at all, even when it wakes a worker.
 *
 * Cancellation: an `offer` cancelled while waiting keeps what was already accepted and hands the rest
 * to its `onCancel`; a `take` cancelled while waiting either left the queue of takers untouched or, if
 * an element was handed to it at that very moment, puts that element back at the head.
 */
private[weir] final class TaskBuffer[F[_], A] private (
    val capacity: Int,
    state: AtomicState[F, TaskBuffer.State[F, A]]
)(using F: Async[F]):
  import TaskBuffer.*

  /** Elements held now, parked ones included. */
  def size: F[Int] = state.get.map(s => s.size + s.parked)

  /**
   * The claimant of `key` is done with an element: returns the next element parked behind it (the key
   * stays claimed) or `None` (the key is released; or the buffer is stopped, and what is parked behind the
   * key stays there, to be returned as not started).
   */
  def finishKey(key: Any): F[Option[Entry[A]]] = state.modify(_.finishKey(key)).flatten

  /**
   * [[finishKey]] for the worker's fast path, when it wakes no producer; `null`, changing nothing, when a
   * waiting producer must be woken (then call [[finishKey]]). A plain call, to be made inside an effect.
   */
  def finishKeyNow(key: Any): Option[Entry[A]] | Null =
    state.modifyNow[Option[Entry[A]] | Null] { s =>
      val quiet = s.finishKeyQuietly(key)
      if quiet == null then (s, null) else quiet
    }

  /**
   * The worker's fast path: takes the oldest claimable element now, if that needs nothing else — no wait,
   * no producer to wake; otherwise returns `null` and changes nothing (then call [[take]]). A plain call,
   * to be made inside an effect.
   */
  @annotation.tailrec
  def tryTakeNow(): Entry[A] | Null =
    val seen = state.now
    val next = seen.takeFromHead
    if next == null then state.modifyNow(_.takeIfFree)
    else if state.compareAndSetNow(seen, next) then Entry(seen.headSeq + seen.pos, seen.head(seen.pos), null)
    else tryTakeNow()

  /** True once stopped, or closed and emptied: takes will only ever return `None`. */
  def isFinished: F[Boolean] = state.get.map(_.finished)

  /** True once stopped. */
  def isStopped: F[Boolean] = state.get.map(_.stopped)

  /** Takers waiting for an element now (idle workers). */
  def waitingTakers: F[Int] = state.get.map(_.takers.size)

  /**
   * Appends `chunk`, waiting while the buffer is full. After each step that stored elements no waiting
   * taker could receive, calls `demand` with their number (so more workers can start before the producer
   * waits). Returns the elements refused because the buffer was stopped (empty when all were accepted).
   * Only the wait is cancelable (wrapped in `poll`), so call this inside `uncancelable`.
   */
  def offer(
      poll: Poll[F],
      chunk: Chunk[A],
      demand: Int => F[Unit],
      onCancel: Chunk[A] => F[Unit]
  ): F[Chunk[A]] =
    // `space` is allocated only once an offer has to wait: the common case is one `modify` per chunk
    def loop(rest: Chunk[A], space: Option[Deferred[F, Unit]]): F[Chunk[A]] =
      state.modify(_.append(rest, space)).flatMap { case (served, appended) =>
        val left = rest.drop(appended.accepted)
        handOver(served) *> demand(appended.unserved).whenA(appended.unserved > 0) *> {
          if appended.refused || left.isEmpty then F.pure(left)
          else
            space match
              case Some(d) => poll(d.get).onCancel(forgetOfferer(d) *> F.unit.flatMap(_ => onCancel(left))) *>
                  loop(left, None)
              case None => F.deferred[Unit].flatMap(d => loop(left, Some(d)))
        }
      }
    if chunk.isEmpty then F.pure(Chunk.empty) else loop(chunk, None)

  /**
   * The producer's fast path: appends all of `chunk` now if it all fits, handing elements to waiting takers
   * on the way (plain calls), and returns [[Offered]], or what is left to run (`demand` for the elements no
   * taker received, when it returns an effect); or returns `null` and changes nothing when the chunk does
   * not all fit or the buffer is stopped (then call [[offer]]). A plain call, to be made inside an effect
   * or a pull step, with what it returns run uncancelably.
   */
  def tryOfferNow(chunk: Chunk[A], demand: Int => F[Unit] | Null): Offered.type | F[Unit] | Null =
    val appended = state.modifyNow[(Served[A], Appended) | Null] { s =>
      if s.stopped || chunk.size > s.free then (s, null) else s.append(chunk, None)
    }
    if appended == null then null
    else
      val (served, outcome) = appended
      handOverNow(served)
      if outcome.unserved == 0 then Offered
      else
        demand(outcome.unserved) match
          case null => Offered
          case start: F[Unit] @unchecked => start

  /**
   * Takes the oldest element (whose key is not claimed, under per-key admission), waiting while there is
   * none. `None` means "look again": the buffer
   * was closed and emptied, stopped, or this taker was woken by [[wake]]. The wait is wrapped in `poll`,
   * so call this inside `uncancelable`.
   */
  def take(poll: Poll[F]): F[Option[Entry[A]]] =
    state.modify(_.takeOrSpin).flatMap {
      case t: Taken[F, A] @unchecked => t.wake.as(Some(t.entry))
      case Finished => F.pure(None)
      case Spin => spin(poll, Spins)
      case MustWait => park(poll, spinner = false)
    }

  /*
   * The spinning taker. When the buffer is empty, one taker (at most `MaxSpinners`) does not park at once:
   * it yields its thread (`cede`) and looks again, a few times, before it parks. While it spins, producers
   * leave one element for it instead of waking a parked taker, so a producer that is only a little slower
   * than the workers hands each task over without a `Deferred`, a park and a wake-up per task. Elements
   * beyond the number of spinners still wake parked takers at once, so no element waits for a spinner
   * while a taker is parked; a spinner that finds nothing parks like any taker.
   */
  // built once: a spin allocates only what `poll`, `onCancel` and the continuation need
  private val cedeAndLook: F[State[F, A]] = F.cede *> state.get
  private val leaveSpinning: F[Unit] = state.modify(_.unspin).flatten

  private def spin(poll: Poll[F], left: Int): F[Option[Entry[A]]] =
    if left == 0 then park(poll, spinner = true)
    else
      // look before writing: an empty look costs a read, not a copy of the state and a contended CAS
      poll(cedeAndLook).onCancel(leaveSpinning).flatMap { seen =>
        if seen.size == 0 && !seen.stopped && !seen.closed then spin(poll, left - 1)
        else
          state.modify(_.spinAgain).flatMap {
            case t: Taken[F, A] @unchecked => t.wake.as(Some(t.entry))
            case Finished => F.pure(None)
            case _ => spin(poll, left - 1)
          }
      }

  /*
   * Parks as a callback in the queue of takers. The look and the registration are one state change, made
   * when the callback exists (inside `async`), so no element can slip past between them. A taker cancelled
   * while parked gives up its place; an element handed to it in that same instant goes back (see `Taker`).
   */
  private def park(poll: Poll[F], spinner: Boolean): F[Option[Entry[A]]] =
    leaveSpinning.whenA(spinner) *> poll(F.async[Option[Entry[A]]] { callback =>
      F.delay {
        val taker = new Taker[A](callback, giveBack)
        (taker, state.modifyNow(_.takeOrWait(taker)))
      }.flatMap {
        case (_, t: Taken[F, A] @unchecked) => t.wake.map { _ => callback(Right(Some(t.entry))); None }
        case (_, Finished) => F.delay { callback(Right(None)); None }
        case (taker, _) => F.pure(Some(abandonTake(taker)))
      }
    })

  /** Wakes up to `n` waiting takers with `None`, so they look at the world again. */
  def wake(n: Int): F[Unit] =
    state.modify { s =>
      val (woken, kept) = s.takers.splitAt(n)
      (s.copy(takers = kept), woken)
    }.flatMap(lookAgain)

  /** No more offers: takers get `None` once the buffer is empty. */
  def close: F[Unit] =
    state.modify(s => (s.copy(closed = true, takers = ScalaQueue.empty), s.takers)).flatMap(lookAgain)

  /** No more takes; offers are refused from now on. Wakes every waiter. */
  def stop: F[Unit] =
    state.modify { s =>
      (s.copy(stopped = true, takers = ScalaQueue.empty, offerers = ScalaQueue.empty), (s.takers, s.offerers))
    }.flatMap((takers, offerers) => lookAgain(takers) *> offerers.traverse_(_._1.complete(()).void))

  /** Removes and returns every element still held (after a `stop`). */
  def remaining: F[Vector[A]] =
    state.modify(s => (s.cleared, s.elements))

  private def forgetOfferer(d: Deferred[F, Unit]): F[Unit] =
    state.update(s => s.copy(offerers = s.offerers.filterNot(_._1 eq d)))

  /** A parked taker was cancelled: it leaves the queue, and what was handed to it meanwhile goes back. */
  private def abandonTake(taker: Taker[A]): F[Unit] =
    F.delay {
      taker.abandon()
      val seen = state.now
      if seen.takers.exists(_ eq taker) then
        state.modifyNow(s => (s.copy(takers = s.takers.filterNot(_ eq taker)), ()))
    }

  private def lookAgain(takers: Iterable[Taker[A]]): F[Unit] =
    if takers.isEmpty then F.unit else F.delay(takers.foreach(_.lookAgain()))

  private def handOver(served: Served[A]): F[Unit] =
    if served.isEmpty then F.unit else F.delay(handOverNow(served))

  /** Puts back an element a cancelled taker never received, serving it again at once if someone waits. */
  private val giveBack: Entry[A] => Unit = entry => handOverNow(state.modifyNow(_.putBack(entry)))

private[weir] object TaskBuffer:

  def apply[F[_], A](capacity: Int, keyOf: Option[A => Any] = None)(using
      F: Async[F]
  ): F[TaskBuffer[F, A]] =
    require(capacity > 0, s"buffer capacity must be > 0, was: $capacity")
    F.delay(new TaskBuffer(capacity, new AtomicState[F, State[F, A]](State.empty[F, A](capacity, keyOf))))

  /** A task, its input position and (under per-key admission) its key. */
  final class Entry[+A](val seq: Long, val task: A, val key: Any)

  /** The key of a task whose key function threw: never equal to another key, so it never waits. */
  final class KeyFailure(val error: Throwable)

  private final case class Appended(accepted: Int, unserved: Int, refused: Boolean)

  /** [[TaskBuffer.tryOfferNow]]: the chunk was appended and there is nothing left to run. */
  object Offered

  /**
   * A parked taker: the waiting fiber's callback, settled exactly once — with an element, with `None`
   * ("look again"), or by the taker giving up when cancelled — by a compare-and-set. Settling is a plain
   * call, so elements are handed over without an effect. When the taker gave up first, whoever hands it
   * an element gives the element back instead; when the element came first, the giving-up taker gives it
   * back itself (Cats Effect runs an `async` finalizer only when the callback's result will not be
   * received), so an element handed over at the moment of a cancellation is served again, never lost.
   */
  private final class Taker[A](
      callback: Either[Throwable, Option[Entry[A]]] => Unit,
      giveBack: Entry[A] => Unit
  ) extends AtomicReference[AnyRef](null):
    def handOver(entry: Entry[A]): Unit =
      if compareAndSet(null, entry) then callback(Right(Some(entry))) else giveBack(entry)

    def lookAgain(): Unit = if compareAndSet(null, LookAgain) then callback(Right(None))

    def abandon(): Unit =
      if !compareAndSet(null, Abandoned) then
        get() match
          case entry: Entry[A] @unchecked => giveBack(entry)
          case _ => ()

  private object LookAgain
  private object Abandoned

  /** Takers served by a state change, each with its element: hand them over once the change is made. */
  private type Served[A] = List[(Taker[A], Entry[A])]

  private def handOverNow[A](served: Served[A]): Unit =
    served.foreach((taker, entry) => taker.handOver(entry))

  // the results without fields are single objects: a take allocates no result unless it took something
  private sealed trait TakeResult[+F[_], +A]
  private final case class Taken[F[_], A](entry: Entry[A], wake: F[Unit]) extends TakeResult[F, A]
  private case object Finished extends TakeResult[Nothing, Nothing]
  private case object MustWait extends TakeResult[Nothing, Nothing]
  private case object Spin extends TakeResult[Nothing, Nothing]

  /** Takers that may spin at once, and how many times each yields before it parks. */
  private val MaxSpinners = 1
  private val Spins = 16

  /*
   * Invariants: `size` counts the queued elements (`front`, `head.drop(pos)`, `rest`), `parked` those in
   * `claimed`'s queues, and size + parked <= capacity; a key is in `claimed` while its claimant runs its
   * elements; takers wait only while no queued element is claimable; an offerer waits until `need` places
   * are free (or was just woken); `next` is the input position of the next element appended.
   */
  private final case class State[F[_], A](
      capacity: Int,
      keyOf: Option[A => Any],
      front: List[Entry[A]], // elements put back by cancelled takers
      head: Chunk[A],
      pos: Int,
      headSeq: Long, // input position of head(0)
      rest: ScalaQueue[Chunk[A]],
      size: Int,
      parked: Int,
      claimed: Map[Any, ScalaQueue[Entry[A]]],
      next: Long,
      takers: ScalaQueue[Taker[A]],
      offerers: ScalaQueue[(Deferred[F, Unit], Int)], // each waits until this many places are free
      closed: Boolean,
      stopped: Boolean,
      spinning: Int // takers spinning (see `TaskBuffer.spin`); as many queued elements are left for them
  )(using F: Async[F]):

    def finished: Boolean = stopped || (closed && size == 0)

    def free: Int = capacity - size - parked

    /**
     * Appends what fits and serves waiting takers, as long as either makes progress; registers `space` (if
     * given) when some of the chunk is left over.
     */
    def append(chunk: Chunk[A], space: Option[Deferred[F, Unit]]): (State[F, A], (Served[A], Appended)) =
      if stopped then (this, (Nil, Appended(0, 0, refused = true)))
      else
        var s = this
        var served: Served[A] = Nil
        var accepted = 0
        var progress = true
        while progress do
          val stored = math.min(chunk.size - accepted, s.free)
          if stored > 0 then
            s = s.enqueue(chunk.drop(accepted).take(stored))
            accepted += stored
          val (next, more) = s.serveTakers
          s = next
          served = more ::: served
          progress = stored > 0 && accepted < chunk.size
        // wake this producer once half the buffer is free, however little it still holds: one wake-up per
        // half buffer, not per freed place (a source of one-element chunks, such as `Stream.range`, would
        // otherwise wake its producer, and with it an idle compute thread, for every task taken), while
        // the other half keeps the workers busy until it has refilled the buffer
        val waiting = space match
          case Some(d) if accepted < chunk.size =>
            s.copy(offerers =
              s.offerers.enqueue((d, math.max(1, capacity / 2)))
            )
          case _ => s
        val unserved = math.max(0, s.size - size)
        (waiting, (served, Appended(accepted, unserved, refused = false)))

    private def enqueue(c: Chunk[A]): State[F, A] =
      if size == 0 && front.isEmpty then
        copy(head = c, pos = 0, headSeq = next, rest = ScalaQueue.empty, size = c.size, next = next + c.size)
      else copy(rest = rest.enqueue(c), size = size + c.size, next = next + c.size)

    /** Hands claimable queued elements to waiting takers, in order. */
    private def serveTakers: (State[F, A], Served[A]) =
      var s = this
      var served: Served[A] = Nil
      while s.takers.nonEmpty && s.size > s.spinning do
        val (popped, entry) = s.popClaimable
        s = popped
        if entry != null then
          val (taker, more) = s.takers.dequeue
          s = s.copy(takers = more)
          served = (taker, entry) :: served
      (s, served)

    /** Takes an element if one is claimable; else becomes a spinner if there is room for one. */
    def takeOrSpin: (State[F, A], TakeResult[F, A]) =
      take(null) match
        case (s, MustWait) if s.spinning < MaxSpinners => (s.copy(spinning = s.spinning + 1), Spin)
        case other => other

    /** A spinner looks again: it stops spinning if it gets an element or the buffer is finished. */
    def spinAgain: (State[F, A], TakeResult[F, A]) =
      take(null) match
        case (s, MustWait) => (s, MustWait)
        case (s, taken: Taken[F, A] @unchecked) =>
          val (served, wakes) = s.unspin
          (served, Taken(taken.entry, taken.wake *> wakes))
        case (s, other) => (s.copy(spinning = s.spinning - 1), other)

    /** A spinner leaves (cancelled): the element left for it goes to a parked taker, if any. */
    def unspin: (State[F, A], F[Unit]) =
      val (s, served) = copy(spinning = spinning - 1).serveTakers
      val (woken, wake) = s.wakeOfferer // serving freed places
      (woken, F.delay(handOverNow(served)) *> wake)

    def takeOrWait(taker: Taker[A]): (State[F, A], TakeResult[F, A]) = take(taker)

    /** Takes a claimable element if no producer is to be woken by it; else stays as it is. */
    def takeIfFree: (State[F, A], Entry[A] | Null) =
      if stopped || size == 0 then (this, null)
      else
        val (s, entry) = popClaimable
        if entry != null && !s.offererFits then (s, entry) else (this, null)

    /**
     * [[takeIfFree]]'s commonest case, with nothing allocated but the next state: no key function, nothing
     * put back, the oldest element in the head chunk, and no producer to wake by taking it. The element
     * taken is `head(pos)` of this state. `null` when the case does not apply (then use [[takeIfFree]]).
     */
    def takeFromHead: State[F, A] | Null =
      if stopped || keyOf.isDefined || front.nonEmpty || pos >= head.size then null
      else
        val next = copy(pos = pos + 1, size = size - 1)
        if next.offererFits then null else next

    private def offererFits: Boolean = offerers.nonEmpty && free >= offerers.head._2

    private def take(waiter: Taker[A] | Null): (State[F, A], TakeResult[F, A]) =
      if stopped then (this, Finished)
      else
        val (s, entry) = popClaimable
        if entry != null then
          val (woken, wake) = s.wakeOfferer
          (woken, Taken(entry, wake))
        else if closed then (s, Finished)
        else
          waiter match
            case null => (s, MustWait)
            case t: Taker[A] @unchecked => (s.copy(takers = s.takers.enqueue(t)), MustWait)

    /**
     * Pops queued elements until one whose key is free (claiming it), parking the others; `null` when none
     * is. One copy of the state however many elements it pops (this runs on every take).
     */
    private def popClaimable: (State[F, A], Entry[A] | Null) =
      var front = this.front
      var head = this.head
      var pos = this.pos
      var headSeq = this.headSeq
      var rest = this.rest
      var size = this.size
      var parked = this.parked
      var claimed = this.claimed
      var found: Entry[A] | Null = null
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
            val queued = entryOf(headSeq + pos, head(pos))
            pos += 1
            queued
        size -= 1
        e.key match
          case null | (_: KeyFailure) => found = e
          case key =>
            claimed.getOrElse(key, null) match
              case null =>
                claimed = claimed.updated(key, ScalaQueue.empty)
                found = e
              case behind: ScalaQueue[Entry[A]] @unchecked =>
                claimed = claimed.updated(key, behind.enqueue(e))
                parked += 1
      if size == this.size then (this, null)
      else
        val s = copy(
          front = front,
          head = head,
          pos = pos,
          headSeq = headSeq,
          rest = rest,
          size = size,
          parked = parked,
          claimed = claimed
        )
        (s, found)

    private def entryOf(seq: Long, task: A): Entry[A] =
      keyOf match
        case None => Entry(seq, task, null)
        case Some(f) =>
          val key =
            try f(task)
            catch case scala.util.control.NonFatal(e) => KeyFailure(e)
          Entry(seq, task, key)

    /** Wakes the first waiting producer if all it holds now fits. */
    private def wakeOfferer: (State[F, A], F[Unit]) =
      offerers.dequeueOption match
        case Some(((o, need), more)) if free >= need => (copy(offerers = more), o.complete(()).void)
        case _ => (this, F.unit)

    /** Hands the element parked first behind `key` on to its claimant, or releases the key; stopped: neither. */
    private def handOnKey(key: Any): (State[F, A], Option[Entry[A]]) =
      if stopped then (this, None)
      else
        claimed.getOrElse(key, null) match
          case behind: ScalaQueue[Entry[A]] @unchecked if behind.nonEmpty =>
            val (e, more) = behind.dequeue
            (copy(claimed = claimed.updated(key, more), parked = parked - 1), Some(e))
          case _ => (copy(claimed = claimed - key), None)

    /** [[finishKey]] when it wakes no producer; `null` when it would (the place it frees lets one go on). */
    def finishKeyQuietly(key: Any): (State[F, A], Option[Entry[A]]) | Null =
      val handed = handOnKey(key)
      if handed._2.isDefined && handed._1.offererFits then null else handed

    def finishKey(key: Any): (State[F, A], F[Option[Entry[A]]]) =
      handOnKey(key) match
        case (next, None) => (next, F.pure(None))
        case (next, following) =>
          val (woken, wake) = next.wakeOfferer // a parked element handed on frees a place
          (woken, wake.as(following))

    /** A cancelled taker's element goes back, with the elements parked behind its key, and is served again. */
    def putBack(e: Entry[A]): (State[F, A], Served[A]) =
      val behind = e.key match
        case null | (_: KeyFailure) => Nil
        case key => claimed.get(key).fold(Nil)(_.toList)
      val back = copy(
        front = e :: behind ++ front,
        size = size + 1 + behind.size,
        parked = parked - behind.size,
        claimed = if e.key == null then claimed else claimed - e.key
      )
      if stopped then (back, Nil) else back.serveTakers

    def elements: Vector[A] =
      front.map(_.task).toVector ++ head.drop(pos).toVector ++ rest.iterator.flatMap(_.iterator) ++
        claimed.valuesIterator.flatMap(_.iterator.map(_.task))

    def cleared: State[F, A] =
      copy(
        front = Nil,
        head = Chunk.empty,
        pos = 0,
        headSeq = next,
        rest = ScalaQueue.empty,
        size = 0,
        parked = 0,
        claimed = Map.empty
      )

  private object State:
    def empty[F[_]: Async, A](capacity: Int, keyOf: Option[A => Any]): State[F, A] =
      State(
        capacity,
        keyOf,
        Nil,
        Chunk.empty,
        0,
        0L,
        ScalaQueue.empty,
        0,
        0,
        Map.empty,
        0L,
        ScalaQueue.empty,
        ScalaQueue.empty,
        false,
        false,
        0
      )
