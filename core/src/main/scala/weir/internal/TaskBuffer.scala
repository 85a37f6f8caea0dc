package weir.internal

import cats.effect.kernel.{Async, Deferred, Poll}
import cats.effect.syntax.all.*
import cats.syntax.all.*
import fs2.Chunk
import weir.internal.BufferState.*

/**
 * The bounded buffer between producers and workers: FIFO, counted in elements (never in chunks), at
 * most `capacity` elements held. Each element is numbered in the order it entered (its input
 * position), which [[weir.TaskOrder.inputOrder]] relies on.
 *
 * This is the effectful shell: waiting (a full buffer for offers, an empty one for takes), waking, and
 * cancellation. The state and the plain calls of the hot paths are in [[unsafe]] ([[UnsafeTaskBuffer]]).
 *
 * Life cycle: open → `close` (no more offers; takers drain what is left, then see `None`) or `stop`
 * (no more takes; everything still held is collected by `remaining`). Both wake every waiter, and cancel the
 * inlet's recheck if one is under way.
 *
 * Per-key admission ([[weir.TaskOrder.byKey]], [[KeyClaims]]): with a key function, taking an element
 * claims its key; an element whose key is claimed is parked behind it instead of being handed out, and
 * the claimant gets the parked elements one by one from [[finishKey]]. Parked elements keep their places
 * (the capacity counts them) until they are handed out. Claiming happens inside the same state change as
 * the take, so elements of one key are always handed out in input order.
 *
 * Cancellation: an `offer` cancelled while waiting keeps what was already accepted and hands the rest
 * to its `onCancel`; a `take` cancelled while waiting either left the queue of takers untouched or, if
 * an element was handed to it at that very moment, puts that element back at the head ([[UnsafeTaker]]).
 */
private[weir] final class TaskBuffer[F[_], A] private (val capacity: Int, val unsafe: UnsafeTaskBuffer[F, A])(
    using F: Async[F]
):

  private def modify[B](f: BufferState[F, A] => B): F[B] = F.delay(unsafe.modify(f))

  /** Elements held now, parked ones included. */
  def size: F[Int] = modify(_.held)

  /** How many takes found nothing to take and parked until a task or a wake-up came, since it was built. */
  def parks: F[Long] = modify(_.parks)

  /**
   * The claimant of `key` is done with an element: returns the next element parked behind it (the key
   * stays claimed) or `None` (the key is released; or the buffer is stopped, and what is parked behind the
   * key stays there, to be returned as not started).
   */
  def finishKey(key: Any): F[Option[Entry[A]]] =
    modify { s =>
      s.finishKey(key, andTake = false) match
        case e: Entry[A] => s.wakeOfferer.as(Some(e)) // an entry handed on frees a place
        case _ => F.pure(None)
    }.flatten

  /** True once stopped, or closed and emptied: takes will only ever return `None`. */
  def isFinished: F[Boolean] = modify(_.finished)

  /** True once stopped. */
  def isStopped: F[Boolean] = modify(_.stopped)

  /** Takers waiting for an element now (idle workers). */
  def waitingTakers: F[Int] = modify(_.takers.size)

  /**
   * Appends `chunk`, waiting while the buffer is full. After each step that stored elements no waiting
   * taker could receive, calls `demand` with their number (so more workers can start before the producer
   * waits). Returns the elements refused because the buffer was stopped (empty when all were accepted).
   * Producers waiting for room are served first come, first served (ADR 0026). Only the wait is cancelable
   * (wrapped in `poll`), so call this inside `uncancelable`; a wait cancelled as it was woken passes the
   * wake-up on to the next producer.
   */
  def offer(
      poll: Poll[F],
      chunk: Chunk[A],
      demand: Int => F[Unit],
      onCancel: Chunk[A] => F[Unit]
  ): F[Chunk[A]] =
    // `space` is allocated only once an offer has to wait: the common case is one `modify` per chunk
    def loop(rest: Chunk[A], space: Option[Deferred[F, Unit]], resumed: Boolean): F[Chunk[A]] =
      append(rest, space, resumed).flatMap { (appended, wake) =>
        val left = rest.drop(appended.accepted)
        val settle = handOver(appended.served) *> demand(appended.unserved).whenA(appended.unserved > 0)
        settle *> wake *> {
          if appended.refused || left.isEmpty then F.pure(left)
          else
            space match
              // woken, it appends and, if need be, queues again in one step: nothing can come between
              case Some(d) => poll(d.get).onCancel(forgetOfferer(d) *> onCancel(left)) *>
                  F.deferred[Unit].flatMap(again => loop(left, Some(again), resumed = true))
              case None => F.deferred[Unit].flatMap(d => loop(left, Some(d), resumed))
        }
      }
    if chunk.isEmpty then F.pure(Chunk.empty) else loop(chunk, None, resumed = false)

  /**
   * Appends what fits of `chunk` now and, in the same swap, takes out the wake-up of the next waiting
   * producer if one is due (a woken producer's turn ends with its append). Reads the clock only when the
   * buffer keeps [[EnqueueTimes]].
   */
  private def append(
      chunk: Chunk[A],
      space: Option[Deferred[F, Unit]],
      resumed: Boolean
  ): F[(Appended[A], F[Unit])] =
    def step(now: Long)(s: BufferState[F, A]): (Appended[A], F[Unit]) =
      val result = s.append(chunk, space, now, resumed)
      (result, s.wakeOfferer)
    if unsafe.measured then F.monotonic.flatMap(now => modify(step(now.toNanos))) else modify(step(0L))

  /**
   * Takes the oldest element (whose key is not claimed, under per-key admission), waiting while there is
   * none. `None` means "look again": the buffer was closed and emptied, stopped, or this taker was woken
   * by [[wake]]. The wait is wrapped in `poll`, so call this inside `uncancelable`. The effect may be kept
   * and run again, each run a take of its own.
   */
  def take(poll: Poll[F]): F[Option[Entry[A]]] =
    // built once per take: a caller that keeps the take and runs it again (a worker) builds its waits once
    val spinning = waits.spin(poll)
    val parking = waits.park(poll)
    takeOrSpin.flatMap {
      case (entry: Entry[A], wake) => wake.as(Some(entry))
      case (Finished, _) => none
      case (Spin, _) => spinning
      case _ => parking // Wait
    }

  private val takeOrSpin: F[Answer[F, A]] = modify(_.takeOrSpin)
  // the fibers of the inlet's rechecks ([[TakerWait]]): owned here, cancelled when the buffer closes or stops
  private val rechecks = FiberGroup.unsafe[F]
  private val waits = new TakerWait(unsafe, rechecks)
  private val none: F[Option[Entry[A]]] = F.pure(None)

  /** Wakes up to `n` waiting takers with `None`, so they look at the world again. */
  def wake(n: Int): F[Unit] =
    modify { s =>
      val woken = s.takers.take(n)
      s.takers.dropInPlace(n)
      woken
    }.flatMap(lookAgain)

  /** No more offers: takers get `None` once the buffer is empty. */
  def close: F[Unit] =
    modify { s =>
      s.closed = true
      s.shut()
      s.takers.removeAll()
    }.flatMap(lookAgain) *> rechecks.close

  /** No more takes; offers are refused from now on. Wakes every waiter. */
  def stop: F[Unit] =
    modify { s =>
      val woken = (s.takers.removeAll(), s.offerers)
      s.shut()
      s.stopped = true
      s.offerers = s.offerers.cleared
      woken
    }.flatMap((takers, offerers) => lookAgain(takers) *> offerers.waiting.traverse_(_.complete(()).void)) *>
      rechecks.close

  /** Removes and returns every element still held (after a `stop`). */
  def remaining: F[Vector[A]] =
    modify { s =>
      val tasks = s.tasks
      s.clear()
      tasks
    }

  /** A cancelled wait for room: see [[BufferState.forgetOfferer]]. */
  private def forgetOfferer(d: Deferred[F, Unit]): F[Unit] = modify(_.forgetOfferer(d)).flatten

  private def lookAgain(takers: Iterable[UnsafeTaker[A]]): F[Unit] =
    if takers.isEmpty then F.unit else F.delay(takers.foreach(_.lookAgain()))

  private def handOver(served: UnsafeTaker.Served[A]): F[Unit] =
    if served.isEmpty then F.unit else F.delay(UnsafeTaker.handOver(served))

private[weir] object TaskBuffer:

  /** A buffer; `measured`: it keeps the time each chunk entered, for queue waits ([[TimedEntry]]). */
  def apply[F[_], A](capacity: Int, keyOf: Option[A => Any] = None, measured: Boolean = false)(using
      F: Async[F]
  ): F[TaskBuffer[F, A]] =
    F.delay(unsafe(capacity, keyOf, measured))

  /** [[apply]] as a plain call, for building a run's parts in one effect. */
  def unsafe[F[_], A](capacity: Int, keyOf: Option[A => Any], measured: Boolean)(using
      F: Async[F]
  ): TaskBuffer[F, A] =
    require(capacity > 0, s"buffer capacity must be > 0, was: $capacity")
    new TaskBuffer(capacity, new UnsafeTaskBuffer(new BufferState[F, A](capacity, keyOf, measured)))
