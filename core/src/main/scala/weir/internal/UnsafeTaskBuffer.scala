package weir.internal

import fs2.Chunk

/**
 * The core of the [[TaskBuffer]]: its [[BufferState]], changed in place under one lock, with the plain calls
 * the engine's hot paths make. [[TaskBuffer]] is the effectful shell around it (waiting, waking,
 * cancellation); each plain call here either completes an operation that needs no wait and no effect, or
 * changes nothing and says so, and the caller then uses the shell.
 *
 * A lock rather than a compare-and-set of an immutable state: a take then allocates its entry and nothing
 * else (a new state, a pair and a changed table of key claims otherwise), and the lock is held for a few
 * field writes, never across a wait, a wake-up or a call out ([[UnsafeSpinLock]], which spins rather than parks
 * a thread that finds it held). Wake-ups are made once it is released.
 *
 * ==Protocol==
 * | call                | completes when                                        | otherwise (nothing changed) |
 * |---------------------|-------------------------------------------------------|-----------------------------|
 * | [[tryOffer]]        | the whole chunk fits and the buffer is not stopped     | [[NoRoom]]: `TaskBuffer.offer` |
 * | [[tryTake]]         | a claimable entry is queued and taking it wakes no producer | [[Later]]: `TaskBuffer.take` |
 * | [[tryFinishKey]]    | handing the key on wakes no producer (a take with it: as [[tryTake]]) | [[Later]]: `TaskBuffer.finishKey` |
 * | `inlet.place`       | the producer has credit and the buffer is open ([[UnsafeInlet]]) | [[tryOffer]] (asks for credit) |
 *
 * The run's only producer, reading by element, places elements in the [[inlet]] without the lock, on places
 * the buffer lent it; a transition that finds the queue empty moves them in first ([[BufferState.absorb]]),
 * and a placement that finds takers parked with no spinner among them is followed by [[serve]].
 *
 * These are plain calls with effects on shared state: call them inside an effect (an `F.delay`, or a
 * continuation that runs once), never while building one that may be run twice. ("Nothing changed" allows
 * one thing: entries a take popped on its way to a claimable one stay parked behind their claimed keys, as
 * the shell's take would have parked them.)
 */
private[weir] final class UnsafeTaskBuffer[F[_], A](state: BufferState[F, A]):
  import UnsafeTaskBuffer.*

  private val lock = new UnsafeSpinLock

  /** Applies the transition `f` to the state under the lock and returns its result. */
  def modify[B](f: BufferState[F, A] => B): B =
    lock.lock()
    try f(state)
    finally unlock()

  // every change under the lock ends here: the producer stops serving takers once none is parked
  private def unlock(): Unit =
    if state.raised && !state.starving then state.lower()
    lock.unlock()

  /** Whether the buffer keeps [[EnqueueTimes]]: its offers need the time they are made. */
  val measured: Boolean = state.measured

  /**
   * Appends all of `chunk` if it all fits, handing entries to waiting takers on the way, and returns how
   * many of its elements no taker received (the demand for more workers); or returns [[NoRoom]] (negative)
   * when the chunk does not all fit, another producer is ahead (waiting for room, or woken and not yet
   * appended: it comes first) or the buffer is stopped. `now`: see [[BufferState.append]].
   */
  def tryOffer(chunk: Chunk[A], now: Long): Int = tryOffer(chunk, now, owner = false, lend = false)

  /**
   * [[tryOffer]] by the producer that owns the [[inlet]] (the run's only one): what it placed is queued first
   * and the credit it did not spend taken back; with `lend`, once the chunk is appended, it is lent places
   * anew, as many as the buffer has free up to [[UnsafeInlet.Slots]], to place elements without the lock.
   * `lend` only when the pool of workers is full: a placement starts no worker.
   */
  def tryOffer(chunk: Chunk[A], now: Long, owner: Boolean, lend: Boolean): Int =
    var served: UnsafeTaker.Served[A] = Nil
    var unserved = NoRoom
    lock.lock()
    try
      if owner then
        state.absorb(): Unit
        val unspent = state.inlet.takeBack()
        if !state.inlet.closed then state.lent -= unspent
      if !state.stopped && chunk.size <= state.free && !state.offerers.ahead then
        val appended = state.append(chunk, None, now, resumed = false)
        served = appended.served
        unserved = appended.unserved
        if lend && !state.closed then
          val n = math.min(state.free, UnsafeInlet.Slots)
          if n > 0 then
            state.lent += n
            state.inlet.lend(n)
    finally unlock()
    UnsafeTaker.handOver(served)
    unserved

  /** The single producer's lane ([[UnsafeInlet]]): its placements, made without the lock. */
  def inlet: UnsafeInlet[A] = state.inlet

  /**
   * After a placement that found takers parked ([[UnsafeInlet.Placed.Hungry]]): moves what was placed into the
   * queue and hands an entry to the first parked taker, the first link of the wake chain.
   */
  def serve(): Unit =
    var served: UnsafeTaker.Served[A] = Nil
    lock.lock()
    try
      state.absorb(): Unit
      if !state.stopped then served = state.serveTakers(1)
    finally unlock()
    UnsafeTaker.handOver(served)

  /**
   * Takes the oldest claimable entry ([[BufferState.take]]) if that needs no wait and wakes no producer;
   * else [[Later]].
   */
  def tryTake(): Handout[A] =
    lock.lock()
    try
      // a take frees a place: one that would let a waiting producer in is left to the shell's take
      if (state.size == 0 && !state.absorb()) || state.stopped || state.offerers.due(state.free + 1) then
        Later
      else
        state.take match
          case e: Entry[A] => e
          case _ => Later
    finally unlock()

  /**
   * The claimant of `key` is done with an entry ([[BufferState.finishKey]]): the next entry parked behind the
   * key (still claimed); with `andTake`, once the key is released, the oldest claimable entry, taken in the
   * same step if that wakes no producer (its key claimed for the caller, as [[tryTake]]'s); [[Released]]
   * (nothing handed on or taken); or [[Later]], and nothing changed, when the place a hand-on frees must wake
   * a producer.
   */
  def tryFinishKey(key: Any, andTake: Boolean): Handout[A] =
    lock.lock()
    try
      if !state.stopped && state.offerers.due(state.free + 1) && state.claimed.hasParked(key) then Later
      else state.finishKey(key, andTake)
    finally unlock()

  /**
   * Whether a take may find something now: entries queued, or the buffer stopped or closed. Read without the
   * lock, so it may be stale: a hint for a spinning taker, whose take, under the lock, decides (a stale "no"
   * costs it a look more, or a park, which looks under the lock before it waits).
   */
  def mayTake: Boolean = state.size > 0 || state.inlet.nonEmpty || state.stopped || state.closed

  /** Puts back an entry a cancelled taker never received, serving it again at once if someone waits. */
  val giveBack: Entry[A] => Unit = entry => UnsafeTaker.handOver(modify(_.putBack(entry)))

  /** Entries queued and parked now (for the suites). */
  private[internal] def held: Int = modify(_.held)

private[weir] object UnsafeTaskBuffer:
  /** [[UnsafeTaskBuffer.tryOffer]]: nothing was appended; offer with `TaskBuffer.offer`. */
  val NoRoom: Int = -1
