package weir.internal

import cats.Parallel
import cats.effect.kernel.{Async, Ref}
import cats.syntax.all.*
import fs2.{Chunk, Pull, Stream}

/**
 * The producers of a run: each of the source's `streams` feeds the [[TaskBuffer]] chunk by chunk, starting
 * workers in the [[WorkerPool]] as elements arrive that no idle worker took. A stream that fails leaves
 * its error in `sourceErrors`, and the others go on.
 */
private[weir] final class Producer[F[_], A](
    ledger: Ledger[A],
    buffer: TaskBuffer[F, A],
    pool: WorkerPool[F, ?],
    sourceErrors: Ref[F, List[Throwable]],
    streams: Vector[Stream[F, A]]
)(using F: Async[F], P: Parallel[F]):

  /**
   * Runs every producer to its end (what follows is the run's: [[RunEnd.Event.SourcesEnded]]). A single
   * stream, the common case, runs in this fiber: `parTraverse_` would start a fiber for it and one for the
   * unit it is combined with, and join both.
   */
  def all: F[Unit] = if owner then one(streams.head) else streams.parTraverse_(one)

  /**
   * Whether this is the run's only producer: it then owns the buffer's [[UnsafeInlet]] and, reading by
   * element while the pool of workers is full, places elements there without the buffer's lock.
   */
  private val owner = streams.sizeIs == 1

  /**
   * Feeds one stream's chunks to the buffer until it ends or is refused.
   *
   * One pull step per chunk, and usually nothing else: the fast offer ([[offer]]) is a plain call made in
   * the step's continuation, which runs once, in this producer's fiber, when the chunk arrives, and cannot
   * be interrupted half-way. An effect is evaluated only when one is needed: workers to start, the slow
   * offer (the buffer is full or stopped), or a clock reading per chunk when the run measures queue waits
   * or the chunk has one element.
   *
   * A stream that gives [[Producer.Singles]] one-element chunks in a row, each within [[Producer.Quick]] of
   * the one before, is read element by element from then on ([[byElement]]): fs2 hands each element of the
   * rest to a function without the pull step (`uncons`), which on a one-element chunk costs more than the
   * element's own production. The switch is one-way (a larger chunk after it is offered element by
   * element, at about twice the cost per task), hence the clock: a stream whose one-element chunks come
   * apart, as polls of a quiet topic or table give them, is read by chunks, and catches up a backlog a
   * chunk at a time.
   *
   * Read by element, the run's only producer places each element in the buffer's [[UnsafeInlet]] while the
   * pool is full (a placement starts no worker) and the buffer lent it room, which it asks for with each
   * offer under the lock: the workers then move the elements placed since they last looked in one step,
   * instead of meeting the producer on the lock for each.
   */
  private def one(stream: Stream[F, A]): F[Unit] =
    // `singles`: one-element chunks in a row, each within `Quick` of the end of the offer before it; `last`:
    // when the last offer ended (time the producer spent waiting for room is not the stream's)
    def go(s: Stream[F, A], singles: Int, last: Long): Pull[F, Nothing, Unit] =
      s.pull.uncons.flatMap {
        case Some((chunk, rest)) if chunk.size == 1 =>
          Pull.eval(F.monotonic).flatMap { at =>
            val now = at.toNanos
            val run = if singles > 0 && now - last <= Producer.Quick then singles + 1 else 1
            place(
              chunk,
              if measured then now else 0L,
              waited =>
                if run == Producer.Singles then byElement(rest)
                else if waited then Pull.eval(F.monotonic).flatMap(end => go(rest, run, end.toNanos))
                else go(rest, run, now)
            )
          }
        case Some((chunk, rest)) =>
          if measured then Pull.eval(F.monotonic).flatMap(now => place(chunk, now.toNanos, afterMany(rest)))
          else place(chunk, 0L, afterMany(rest))
        case None => Pull.done
      }
    def afterMany(rest: Stream[F, A]): Boolean => Pull[F, Nothing, Unit] = _ => go(rest, 0, 0L)
    // `next(waited)` goes on after the offer, told whether it took an effect
    def place(chunk: Chunk[A], now: Long, next: Boolean => Pull[F, Nothing, Unit]): Pull[F, Nothing, Unit] =
      offer(chunk, now, lend = false) match
        case None => next(false)
        case Some(finish) => Pull.eval(finish).flatMap(goOn => if goOn then next(true) else Pull.done)
    go(stream, 0, 0L).stream.compile.drain.handleErrorWith(e => sourceErrors.update(e :: _))

  /**
   * The rest of a stream, an element at a time: each element's fast offer runs in the function fs2 calls
   * with it; a slow offer's answer is the one element the stream emits, and a refusal (false) ends it
   * (`takeWhile`), so the producer reads no further.
   */
  private def byElement(s: Stream[F, A]): Pull[F, Nothing, Unit] =
    s.flatMap(element).takeWhile(identity).drain.pull.echo

  // read once: the buffer's state, where the reference lives, is on lines the takers write
  private val inlet = buffer.unsafe.inlet

  private val element: A => Stream[F, Boolean] = a =>
    if measured then Stream.eval(F.monotonic).flatMap(now => offered(Chunk.singleton(a), now.toNanos))
    else if owner && pool.full then
      // counted received by the inlet as it is placed ([[Ledger]])
      inlet.place(a) match
        case UnsafeInlet.Placed.Placed => Stream.empty
        case UnsafeInlet.Placed.Hungry =>
          buffer.unsafe.serve()
          Stream.empty
        case _ => // no room lent, or the buffer closed: the offer under the lock asks for room, or is refused
          offered(Chunk.singleton(a), 0L)
    else offered(Chunk.singleton(a), 0L)

  private def offered(chunk: Chunk[A], now: Long): Stream[F, Boolean] =
    offer(chunk, now, lend = owner && !measured) match
      case None => Stream.empty
      case Some(finish) => Stream.eval(finish)

  /**
   * The fast offer of a chunk ([[UnsafeTaskBuffer.tryOffer]]), a plain call: `None` when it placed the
   * chunk and no worker needs starting; else the effect that finishes the offer (starts workers, or waits
   * for room: the slow offer), true if the producer goes on.
   *
   * The chunk is counted received before it can be taken (so a snapshot never shows a task started but
   * not received), and again by the slow offer only if the fast one placed nothing, so that a producer
   * cancelled before the slow offer runs leaves no task counted and unplaced. `lend`: the buffer may lend
   * the inlet room (reading by element).
   */
  private def offer(chunk: Chunk[A], now: Long, lend: Boolean): Option[F[Boolean]] =
    ledger.received(chunk.size)
    val unserved = buffer.unsafe.tryOffer(chunk, now, owner, lend = lend && pool.full)
    if unserved == UnsafeTaskBuffer.NoRoom then
      ledger.received(-chunk.size)
      Some(slowOffer(chunk))
    else pool.grow(unserved).map(start => F.uncancelable(_ => start).as(true))

  /** Whether offers carry the time they are made (the run measures queue waits). */
  private val measured = buffer.unsafe.measured

  /** Starts workers for `n` elements no taker got, as far as the pool has room. */
  private val grow: Int => F[Unit] = n => F.defer(pool.grow(n).getOrElse(F.unit))

  /**
   * Offers what the fast offer could not place, waiting for room; false once the buffer refuses tasks (the
   * run is stopping: the refused ones are recorded as not started, and the producer reads no further).
   */
  private def slowOffer(chunk: Chunk[A]): F[Boolean] =
    F.uncancelable { poll =>
      F.delay(ledger.received(chunk.size)) *>
        buffer.offer(poll, chunk, grow, rest => F.delay(ledger.notStarted(rest.toList))).flatMap { refused =>
          if refused.isEmpty then F.pure(true) else F.delay(ledger.notStarted(refused.toList)).as(false)
        }
    }

private object Producer:

  /** One-element chunks in a row after which a producer reads its stream element by element. */
  val Singles = 16

  /**
   * The most time between those chunks, in nanoseconds: a stream that gives an element every 10 µs spends
   * under 2% of it on the pull step per chunk; a poll of a server takes longer than that.
   */
  val Quick = 10_000L
