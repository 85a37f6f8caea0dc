package weir.internal

import cats.effect.kernel.{Concurrent, Deferred, Poll, Ref}
import cats.effect.syntax.all.*
import cats.syntax.all.*
import fs2.Chunk

import scala.collection.immutable.Queue as ScalaQueue

/**
 * The bounded buffer between producers and workers: FIFO, counted in elements (never in chunks), at
 * most `capacity` elements held. Each element is numbered in the order it entered (its input
 * position), which [[weir.Ordering.inputOrder]] relies on.
 *
 * Life cycle: open → `close` (no more offers; takers drain what is left, then see `None`) or `stop`
 * (no more takes; everything still held is collected by `remaining`). Both wake every waiter.
 *
 * Cancellation: an `offer` cancelled while waiting keeps what was already accepted and hands the rest
 * to its `onCancel`; a `take` cancelled while waiting either left the queue of takers untouched or, if
 * an element was handed to it at that very moment, puts that element back at the head.
 */
private[weir] final class TaskBuffer[F[_], A] private (
    val capacity: Int,
    state: Ref[F, TaskBuffer.State[F, A]]
)(using F: Concurrent[F]):
  import TaskBuffer.*

  /** Elements held now. */
  def size: F[Int] = state.get.map(_.size)

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
      state.modify(_.append(rest, space)).flatMap { case (wakes, appended) =>
        val left = rest.drop(appended.accepted)
        wakes *> demand(appended.unserved).whenA(appended.unserved > 0) *> {
          if appended.refused || left.isEmpty then F.pure(left)
          else
            space match
              case Some(d) => poll(d.get).onCancel(forgetOfferer(d) *> onCancel(left)) *> loop(left, None)
              case None => F.deferred[Unit].flatMap(d => loop(left, Some(d)))
        }
      }
    if chunk.isEmpty then F.pure(Chunk.empty) else loop(chunk, None)

  /**
   * Takes the oldest element, waiting while the buffer is empty. `None` means "look again": the buffer
   * was closed and emptied, stopped, or this taker was woken by [[wake]]. The wait is wrapped in `poll`,
   * so call this inside `uncancelable`.
   */
  def take(poll: Poll[F]): F[Option[Entry[A]]] =
    state.modify(_.takeNow).flatMap {
      case Taken(entry, wake) => wake.as(Some(entry))
      case Finished() => F.pure(None)
      case MustWait() =>
        F.deferred[Option[Entry[A]]].flatMap { d =>
          state.modify(_.takeOrWait(d)).flatMap {
            case Taken(entry, wake) => wake.as(Some(entry))
            case Finished() => F.pure(None)
            case MustWait() => poll(d.get).onCancel(abandonTake(d))
          }
        }
    }

  /** Wakes up to `n` waiting takers with `None`, so they look at the world again. */
  def wake(n: Int): F[Unit] =
    state.modify { s =>
      val (woken, kept) = s.takers.splitAt(n)
      (s.copy(takers = kept), woken.traverse_(_.complete(None).void))
    }.flatten

  /** No more offers: takers get `None` once the buffer is empty. */
  def close: F[Unit] =
    state.modify(s =>
      (s.copy(closed = true, takers = ScalaQueue.empty), s.takers.traverse_(_.complete(None).void))
    ).flatten

  /** No more takes; offers are refused from now on. Wakes every waiter. */
  def stop: F[Unit] =
    state.modify { s =>
      val wakes = s.takers.traverse_(_.complete(None).void) *> s.offerers.traverse_(_._1.complete(()).void)
      (s.copy(stopped = true, takers = ScalaQueue.empty, offerers = ScalaQueue.empty), wakes)
    }.flatten

  /** Removes and returns every element still held (after a `stop`). */
  def remaining: F[Vector[A]] =
    state.modify(s => (s.cleared, s.elements))

  private def forgetOfferer(d: Deferred[F, Unit]): F[Unit] =
    state.update(s => s.copy(offerers = s.offerers.filterNot(_._1 eq d)))

  private def abandonTake(d: Deferred[F, Option[Entry[A]]]): F[Unit] =
    state.modify { s =>
      if s.takers.exists(_ eq d) then (s.copy(takers = s.takers.filterNot(_ eq d)), F.unit)
      else
        (
          s,
          d.tryGet.flatMap {
            case Some(Some(entry)) => putBack(entry)
            case _ => F.unit
          }
        )
    }.flatten

  private def putBack(entry: Entry[A]): F[Unit] =
    state.modify(_.pushFront(entry)).flatten

private[weir] object TaskBuffer:

  def apply[F[_], A](capacity: Int)(using F: Concurrent[F]): F[TaskBuffer[F, A]] =
    require(capacity > 0, s"buffer capacity must be > 0, was: $capacity")
    F.ref(State.empty[F, A](capacity)).map(new TaskBuffer(capacity, _))

  /** A task and its input position. */
  final class Entry[+A](val seq: Long, val task: A)

  private final case class Appended(accepted: Int, unserved: Int, refused: Boolean)

  private sealed trait TakeResult[F[_], A]
  private final case class Taken[F[_], A](entry: Entry[A], wake: F[Unit]) extends TakeResult[F, A]
  private final case class Finished[F[_], A]() extends TakeResult[F, A]
  private final case class MustWait[F[_], A]() extends TakeResult[F, A]

  /*
   * Invariants: `size` is the number of elements in `front`, `head.drop(pos)` and `rest`;
   * takers wait only while size == 0; an offerer waits until `need` slots are free (or was just woken);
   * `next` is the input position of the next element appended.
   */
  private final case class State[F[_], A](
      capacity: Int,
      front: List[Entry[A]], // elements put back by cancelled takers, oldest first
      head: Chunk[A],
      pos: Int,
      headSeq: Long, // input position of head(0)
      rest: ScalaQueue[Chunk[A]],
      size: Int,
      next: Long,
      takers: ScalaQueue[Deferred[F, Option[Entry[A]]]],
      offerers: ScalaQueue[(Deferred[F, Unit], Int)], // each waits until this many slots are free
      closed: Boolean,
      stopped: Boolean
  )(using F: Concurrent[F]):

    def finished: Boolean = stopped || (closed && size == 0)

    /** Appends what fits, serving waiting takers first; registers `space` (if given) when some is left over. */
    def append(chunk: Chunk[A], space: Option[Deferred[F, Unit]]): (State[F, A], (F[Unit], Appended)) =
      if stopped then (this, (F.unit, Appended(0, 0, refused = true)))
      else
        var takersLeft = takers
        var handed = 0
        var wakes = F.unit
        while takersLeft.nonEmpty && handed < chunk.size do
          val (d, more) = takersLeft.dequeue
          val entry = Entry(next + handed, chunk(handed))
          wakes = wakes *> d.complete(Some(entry)).void
          takersLeft = more
          handed += 1
        val stored = math.min(chunk.size - handed, capacity - size)
        val storedChunk = chunk.drop(handed).take(stored)
        val grown =
          if stored == 0 then this
          else if size == 0 && front.isEmpty then
            copy(head = storedChunk, pos = 0, headSeq = next + handed, rest = ScalaQueue.empty)
          else copy(rest = rest.enqueue(storedChunk))
        val accepted = handed + stored
        // wake this producer once all it still holds fits: one wake-up per chunk, not per freed slot
        val waiting = space match
          case Some(d) if accepted < chunk.size =>
            offerers.enqueue((d, math.min(chunk.size - accepted, capacity)))
          case _ => offerers
        val s =
          grown.copy(size = size + stored, next = next + accepted, takers = takersLeft, offerers = waiting)
        (s, (wakes, Appended(accepted, stored, refused = false)))

    def takeNow: (State[F, A], TakeResult[F, A]) =
      if stopped then (this, Finished())
      else if size == 0 then (this, if closed then Finished() else MustWait())
      else dequeue

    def takeOrWait(d: Deferred[F, Option[Entry[A]]]): (State[F, A], TakeResult[F, A]) =
      if stopped then (this, Finished())
      else if size == 0 then
        if closed then (this, Finished()) else (copy(takers = takers.enqueue(d)), MustWait())
      else dequeue

    private def dequeue: (State[F, A], TakeResult[F, A]) =
      val (entry, taken) = front match
        case e :: more => (e, copy(front = more))
        case Nil =>
          if pos < head.size then
            (Entry(headSeq + pos, head(pos)), copy(pos = pos + 1))
          else
            val (c, more) = rest.dequeue
            (Entry(headSeq + pos, c(0)), copy(head = c, pos = 1, headSeq = headSeq + pos, rest = more))
      offerers.dequeueOption match
        case Some(((o, need), more)) if capacity - (size - 1) >= need =>
          (taken.copy(size = size - 1, offerers = more), Taken(entry, o.complete(()).void))
        case _ => (taken.copy(size = size - 1), Taken(entry, F.unit))

    def pushFront(entry: Entry[A]): (State[F, A], F[Unit]) =
      if !stopped && takers.nonEmpty then
        val (d, more) = takers.dequeue
        (copy(takers = more), d.complete(Some(entry)).void)
      else (copy(front = entry :: front, size = size + 1), F.unit)

    def elements: Vector[A] =
      front.map(_.task).toVector ++ head.drop(pos).toVector ++ rest.iterator.flatMap(_.iterator)

    def cleared: State[F, A] =
      copy(front = Nil, head = Chunk.empty, pos = 0, headSeq = next, rest = ScalaQueue.empty, size = 0)

  private object State:
    def empty[F[_]: Concurrent, A](capacity: Int): State[F, A] =
      State(
        capacity,
        Nil,
        Chunk.empty,
        0,
        0L,
        ScalaQueue.empty,
        0,
        0L,
        ScalaQueue.empty,
        ScalaQueue.empty,
        false,
        false
      )
