package weir.internal

import cats.effect.kernel.Async
import cats.syntax.all.*
import fs2.{Chunk, Stream}

import scala.reflect.ClassTag

/**
 * Many writers, one reader, at most `capacity` items waiting, and a plain step for the common write: a
 * writer that finds room adds its item to an array under a lock held for a few field writes ([[UnsafeSpinLock]]), and wakes the
 * reader only when it waits. The reader takes everything waiting at once, as one chunk: the array itself,
 * which the writers leave for a fresh one. It carries the outcome stream ([[Outcomes]]), where fs2's
 * `Channel.bounded` would make each outcome an effect of several steps, and the interruptions of running
 * tasks to the worker pool ([[WorkerPool.interrupt]]), written from whatever thread interrupts.
 *
 * A lock rather than a compare-and-set of an immutable state: a write then allocates nothing but, now and
 * then, a larger array (a state and a list cell per write otherwise, and a reversed list per read), and
 * nothing that could block or call out runs under it — wake-ups are called after it is released.
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

  // guarded by `lock`; invariant: a reader waits only while `size` is 0 and the inbox is open, a writer only
  // while `size` is `capacity` and the inbox is open
  private val lock = new UnsafeSpinLock
  private var items =
    new Array[Any](math.min(capacity, FirstArray)) // the first `size` are waiting, oldest first
  private var size = 0
  private var reader: Option[Wake] = None
  private var writers: List[Wake] = Nil
  private var closed = false

  /**
   * Writes `o` if there is room, waking the reader if it waits; true when written, or dropped because the
   * inbox is closed; false, and nothing changed, when it is full. A plain call, to be made inside an
   * effect.
   */
  def trySend(o: O): Boolean =
    var woken: Option[Wake] = None
    var answer = true
    lock.lock()
    try
      if closed then ()
      else if size >= capacity then answer = false
      else
        if size == items.length then
          val larger = new Array[Any](grown(size))
          System.arraycopy(items, 0, larger, 0, size)
          items = larger
        items(size) = o
        size += 1
        woken = reader
        reader = None
    finally lock.unlock()
    woken.foreach(_(Woken))
    answer

  private def grown(length: Int): Int = math.min(capacity.toLong, length.toLong * 2).toInt

  /** Writes `o`, waiting while the inbox is full (see [[trySend]]). */
  def send(o: O): F[Unit] = F.defer(if trySend(o) then F.unit else roomFor(o))

  private def roomFor(o: O): F[Unit] =
    F.async[Unit] { wake =>
      F.delay(if waitForRoom(wake) then Some(F.delay(forgetWriter(wake))) else { wake(Woken); None })
    } *> send(o)

  /** Registers a writer's wake-up while the inbox is full and open; false when it is not (any more). */
  private def waitForRoom(wake: Wake): Boolean =
    locked {
      if closed || size < capacity then false
      else
        writers = wake :: writers
        true
    }

  private def forgetWriter(wake: Wake): Unit = locked { writers = writers.filterNot(_ eq wake) }

  // for the rare paths (waits, the reader's take, close): a closure per call is fine there
  private def locked[X](body: => X): X =
    lock.lock()
    try body
    finally lock.unlock()

  /** Everything waiting, in the order written, and the writers woken; `None` once closed and emptied. */
  private val take: F[Option[Chunk[O]]] =
    F.defer {
      locked {
        if size > 0 then
          val chunk =
            Chunk.array(items.asInstanceOf[Array[O]], 0, size)(using ClassTag.Any.asInstanceOf[ClassTag[O]])
          // the next array as large as this read's: a reader that keeps up reads few items at a time
          items = new Array[Any](math.max(size, math.min(capacity, FirstArray)))
          size = 0
          val woken = writers
          writers = Nil
          Taken.Items(chunk, woken)
        else if closed then Taken.Ended
        else Taken.Empty
      } match
        case Taken.Items(chunk, woken) =>
          woken.foreach(_(Woken))
          F.pure(Some(chunk))
        case Taken.Ended => F.pure(None)
        case Taken.Empty => awaitItem *> take
    }

  private val awaitItem: F[Unit] =
    F.async[Unit] { wake =>
      F.delay(if waitForItem(wake) then Some(F.delay(forgetReader(wake))) else { wake(Woken); None })
    }

  /** Registers the reader's wake-up while nothing waits and the inbox is open; false otherwise. */
  private def waitForItem(wake: Wake): Boolean =
    locked {
      if closed || size > 0 then false
      else
        reader = Some(wake)
        true
    }

  private def forgetReader(wake: Wake): Unit =
    locked(if reader.exists(_ eq wake) then reader = None)

  /** The items, in chunks of what waited; ends once the inbox is closed and emptied. One reader only. */
  def stream: Stream[F, O] = Stream.unfoldChunkEval(())(_ => take.map(_.map(_ -> ())))

  /** No more writes: the reader gets what is left, then the end; waiting writers are woken (and dropped). */
  val close: F[Unit] =
    F.delay {
      val (r, ws) = locked {
        val waiting = (reader, writers)
        reader = None
        writers = Nil
        closed = true
        waiting
      }
      r.foreach(_(Woken))
      ws.foreach(_(Woken))
    }

private[weir] object Inbox:

  /** An inbox holding at most `capacity` items. A plain call, for building a run's parts in one effect. */
  def unsafe[F[_]: Async, O](capacity: Int): Inbox[F, O] =
    require(capacity > 0, s"inbox capacity must be > 0, was: $capacity")
    new Inbox[F, O](capacity)

  private type Wake = Either[Throwable, Unit] => Unit
  private val Woken: Either[Throwable, Unit] = Right(())

  /** What the reader found: the items waiting (and the writers to wake), the end, or nothing yet. */
  private enum Taken[+O]:
    case Items(chunk: Chunk[O], woken: List[Wake])
    case Ended
    case Empty

  /** The first array's length, and the least any later one has (at most the capacity). */
  private val FirstArray = 16
