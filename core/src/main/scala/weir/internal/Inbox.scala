package weir.internal

import cats.effect.kernel.Async
import cats.syntax.all.*
import fs2.{Chunk, Stream}

import java.util.concurrent.atomic.AtomicReference
import scala.annotation.tailrec

/**
 * Many writers, one reader, at most `capacity` items waiting, and a plain step for the common write: a
 * writer that finds room adds its item with one compare-and-set, and wakes the reader only when it waits.
 * The reader takes everything waiting at once, as one chunk. It carries the outcome stream
 * ([[weir.Pipeline.startWithOutcomes]]), where fs2's `Channel.bounded` would make each outcome an effect of
 * several steps, and the interruptions of running tasks to the worker pool ([[WorkerPool.interrupt]]),
 * written from whatever thread interrupts.
 *
 * A write that finds no room waits ([[send]]) until the reader has taken what waited. Closing wakes everyone:
 * the reader reads what is left, then the stream ends; a write after the close is dropped (the run is
 * stopping and its reader gone, or done reading).
 *
 * Cancellation: a writer or the reader cancelled while it waits leaves nothing behind (its wake-up is
 * removed); a cancelled writer's item was not written.
 */
private[weir] final class Inbox[F[_], O] private (capacity: Int)(using F: Async[F]):
  import Inbox.*

  private val state = new AtomicReference[State[O]](State(Nil, 0, None, Nil, closed = false))

  /**
   * Writes `o` if there is room, waking the reader if it waits; true when written, or dropped because the
   * inbox is closed; false, and nothing changed, when it is full. A plain call, to be made inside an
   * effect.
   */
  @tailrec def trySend(o: O): Boolean =
    val s = state.get
    if s.closed then true
    else if s.size >= capacity then false
    else if state.compareAndSet(s, State(o :: s.items, s.size + 1, None, s.writers, closed = false)) then
      s.reader.foreach(_(Woken))
      true
    else trySend(o)

  /** Writes `o`, waiting while the inbox is full (see [[trySend]]). */
  def send(o: O): F[Unit] = F.defer(if trySend(o) then F.unit else roomFor(o))

  private def roomFor(o: O): F[Unit] =
    F.async[Unit] { wake =>
      F.delay(if waitForRoom(wake) then Some(F.delay(forgetWriter(wake))) else { wake(Woken); None })
    } *> send(o)

  /** Registers a writer's wake-up while the inbox is full and open; false when it is not (any more). */
  @tailrec private def waitForRoom(wake: Wake): Boolean =
    val s = state.get
    if s.closed || s.size < capacity then false
    else if state.compareAndSet(s, s.copy(writers = wake :: s.writers)) then true
    else waitForRoom(wake)

  @tailrec private def forgetWriter(wake: Wake): Unit =
    val s = state.get
    if s.writers.exists(_ eq wake) &&
      !state.compareAndSet(s, s.copy(writers = s.writers.filterNot(_ eq wake)))
    then forgetWriter(wake)

  /** Everything waiting, in the order written, and the writers woken; `None` once closed and emptied. */
  private val take: F[Option[Chunk[O]]] =
    F.defer {
      val s = state.get
      if s.size > 0 then
        if state.compareAndSet(s, State(Nil, 0, None, Nil, s.closed)) then
          s.writers.foreach(_(Woken))
          F.pure(Some(Chunk.from(s.items.reverse)))
        else take
      else if s.closed then F.pure(None)
      else awaitItem *> take
    }

  private val awaitItem: F[Unit] =
    F.async[Unit] { wake =>
      F.delay(if waitForItem(wake) then Some(F.delay(forgetReader(wake))) else { wake(Woken); None })
    }

  /** Registers the reader's wake-up while nothing waits and the inbox is open; false otherwise. */
  @tailrec private def waitForItem(wake: Wake): Boolean =
    val s = state.get
    if s.closed || s.size > 0 then false
    else if state.compareAndSet(s, s.copy(reader = Some(wake))) then true
    else waitForItem(wake)

  @tailrec private def forgetReader(wake: Wake): Unit =
    val s = state.get
    if s.reader.exists(_ eq wake) && !state.compareAndSet(s, s.copy(reader = None)) then forgetReader(wake)

  /** The items, in chunks of what waited; ends once the inbox is closed and emptied. One reader only. */
  def stream: Stream[F, O] = Stream.unfoldChunkEval(())(_ => take.map(_.map(_ -> ())))

  /** No more writes: the reader gets what is left, then the end; waiting writers are woken (and dropped). */
  val close: F[Unit] =
    F.delay(state.getAndUpdate(s => s.copy(reader = None, writers = Nil, closed = true))).flatMap { s =>
      F.delay {
        s.reader.foreach(_(Woken))
        s.writers.foreach(_(Woken))
      }
    }

private[weir] object Inbox:

  /** An inbox holding at most `capacity` items. A plain call, for building a run's parts in one effect. */
  def unsafe[F[_]: Async, O](capacity: Int): Inbox[F, O] =
    require(capacity > 0, s"inbox capacity must be > 0, was: $capacity")
    new Inbox[F, O](capacity)

  private type Wake = Either[Throwable, Unit] => Unit
  private val Woken: Either[Throwable, Unit] = Right(())

  /*
   * `items` newest first; `reader` the reader's wake-up while it waits for an item;
   * `writers` the wake-ups of writers waiting for room. Invariant: a reader waits only while `size` is 0 and
   * the inbox is open; a writer only while `size` is `capacity` and the inbox is open.
   */
  private final case class State[O](
      items: List[O],
      size: Int,
      reader: Option[Wake],
      writers: List[Wake],
      closed: Boolean
  )
