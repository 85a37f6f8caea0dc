package weir.postgres.internal

import weir.postgres.WorkerStats

import java.util.concurrent.atomic.{AtomicLong, AtomicReference}

/** A worker's counters, bumped by its parts from any thread; read as a [[WorkerStats]]. */
private[postgres] final class Counters:
  val claimed, heldBack, completed, retried, dead, cancelled, handedBack, snoozed, refused, rescued, taken,
      databaseErrors =
    new AtomicLong
  private val last = new AtomicReference[Option[Throwable]](None)

  def error(e: Throwable): Unit =
    databaseErrors.incrementAndGet()
    last.set(Some(e))

  def stats: WorkerStats =
    WorkerStats(
      claimed = claimed.get,
      heldBack = heldBack.get,
      completed = completed.get,
      retried = retried.get,
      dead = dead.get,
      cancelled = cancelled.get,
      handedBack = handedBack.get,
      snoozed = snoozed.get,
      rescued = rescued.get,
      taken = taken.get,
      refused = refused.get,
      databaseErrors = databaseErrors.get,
      lastError = last.get
    )
