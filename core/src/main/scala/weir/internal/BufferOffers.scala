package weir.internal

import cats.effect.kernel.{Async, Deferred}
import fs2.Chunk
import weir.internal.BufferState.Appended
import weir.internal.UnsafeTaker.Served

/**
 * The offers of a [[BufferState]]: appending a producer's chunk, serving waiting takers on the way, and the
 * producers that wait for room ([[Offerers]]). Transitions under the buffer's lock, like every method of the state.
 */
private[weir] trait BufferOffers[F[_], A]:
  self: BufferState[F, A] =>

  /**
   * Appends what fits and hands an entry to one parked taker, the first link of the wake chain
   * ([[BufferTakes.relay]]); appends again what the serving let in; registers `space` (if given) when some of
   * the chunk is left over. The entries it leaves for parked takers do not count as unserved: the chain
   * wakes those takers before any new worker could start. `now` is when it is appended, if the run
   * measures queue waits (otherwise unread).
   * An offer not `resumed` (woken from a wait for room) queues while a producer is ahead ([[Offerers]]).
   */
  def append(chunk: Chunk[A], space: Option[Deferred[F, Unit]], now: Long, resumed: Boolean): Appended[A] =
    absorb(): Unit // what the producer placed before comes first
    if stopped then Appended(Nil, 0, 0, refused = true)
    else if !resumed && offerers.ahead then
      space.foreach(d => offerers = offerers.queued(d))
      Appended(Nil, 0, 0, refused = false)
    else
      if resumed then offerers = offerers.appended
      val before = size
      var served: Served[A] = Nil
      var accepted = 0
      var progress = true
      while progress do
        val stored = math.min(chunk.size - accepted, free)
        if stored > 0 then
          enqueue(chunk.drop(accepted).take(stored), now)
          accepted += stored
        if served.isEmpty then served = serveTakers(1)
        progress = stored > 0 && accepted < chunk.size
      val appended = Appended(served, accepted, unserved(size - before), refused = false)
      space match
        case Some(d) if accepted < chunk.size =>
          offerers = if resumed then offerers.requeuedFirst(d) else offerers.queued(d)
        case _ => ()
      appended

  /** Of `left` entries an append left queued, those no parked taker will get through the wake chain. */
  private def unserved(left: Int): Int = if left <= 0 then 0 else math.max(0, left - takers.size)

  private[internal] def enqueue(c: Chunk[A], now: Long): Unit =
    if size == 0 && front.isEmpty then
      head = c
      pos = 0
      headSeq = next
      rest.clear()
      times = times.appended(now, asHead = true)
    else
      rest.append(c)
      times = times.appended(now, asHead = false)
    size += c.size
    next += c.size

  /** A wait for room on `space` was cancelled ([[Offerers.forgotten]]); the next producer may go. */
  def forgetOfferer(space: Deferred[F, Unit])(using Async[F]): F[Unit] =
    offerers = offerers.forgotten(space)
    wakeOfferer
