package weir.postgres.internal

import fs2.Chunk
import weir.Interruption

import java.util.concurrent.ConcurrentHashMap

/**
 * The claims a worker holds and has not yet finished in the database, by token, each with whether its task
 * has an ordering key and whether it may have started. The claimer adds a claim before handing its task on;
 * the completer removes it once its finish has committed. The heartbeat extends the leases of exactly these
 * claims, so a task this process forgot is not kept alive by it.
 *
 * A claim whose finish has been handed to the completer is `finishing`: its row may be gone at any moment
 * for that reason. A claim whose row is gone without that is `taken`: another worker rescued it, having
 * taken this one for dead (its heartbeat fell silent for `deadAfter`), and it may already run there.
 *
 * Whether a claim may have started decides how the worker's last step hands it back: a task that never
 * started goes back uncounted, one that may have run goes back counted. A claim is marked as handed to the
 * pipeline before the pipeline can receive it, and unmarked only when the pipeline returns it as not
 * started; so an unmarked claim is one whose task never started, and any doubt (a marked task the
 * pipeline never received) falls on the counted side.
 */
private[postgres] final class Claims:
  import Claims.Held

  private val held = new ConcurrentHashMap[Long, Held]

  /** Adds a claim; returns the switch that interrupts its task (see [[interrupt]]). */
  def add(token: Long, keyed: Boolean): Interruption =
    val interruption = new Interruption
    held.put(token, Held(keyed, handedOn = false, interruption = interruption))
    interruption

  /**
   * Tells the task of the claim `token` to stop, for `reason` (its cancel was requested): interrupted if it
   * runs, refused if it has not started. True if this worker holds the claim and it was not told before.
   */
  def interrupt(token: Long, reason: String): Boolean =
    Option(held.get(token)).exists(_.interruption.request(reason))

  /**
   * Marks a claim as finishing: its finish is with the completer. A finish that hands the claim back
   * (`notStarted`) also marks its task as returned by the pipeline without having started.
   */
  def finishing(token: Long, notStarted: Boolean): Unit =
    held.computeIfPresent(
      token,
      (_, h) => h.copy(finishing = true, handedOn = h.handedOn && !notStarted)
    ): Unit

  /**
   * Marks as taken those of `tokens` whose rows the database no longer holds for this worker, unless their
   * finish is what removed them; returns how many were newly marked. The caller reads `tokens` before
   * asking the database and calls this after: a finish that commits in between was marked finishing before
   * it could commit.
   */
  def taken(tokens: Iterable[Long]): Int =
    var n = 0
    tokens.foreach(token =>
      held.computeIfPresent(
        token,
        (_, h) =>
          if h.finishing || h.taken then h
          else
            n += 1
            h.copy(taken = true)
      ): Unit
    )
    n

  /** Marks the claims of `tokens` as handed to the pipeline, which may start them from now on. */
  def handedOn(tokens: Chunk[Long]): Unit =
    tokens.foreach(token => held.computeIfPresent(token, (_, h) => h.copy(handedOn = true)): Unit)

  /** Forgets a claim; true if its task had an ordering key. */
  def remove(token: Long): Boolean = Option(held.remove(token)).exists(_.keyed)

  def isKeyed(token: Long): Boolean = Option(held.get(token)).exists(_.keyed)

  /** Whether the claim `token` was found rescued by another worker (see [[taken]]). */
  def isTaken(token: Long): Boolean = Option(held.get(token)).exists(_.taken)

  def size: Int = held.size
  def tokens: Array[Long] = select(_ => true)

  /** The claims whose task may have started: handed to the pipeline and not returned unstarted. */
  def maybeStarted: Array[Long] = select(_.handedOn)

  private def select(p: Held => Boolean): Array[Long] =
    val out = Array.newBuilder[Long]
    held.forEach((token, h) => if p(h) then out.addOne(token): Unit)
    out.result()

private[postgres] object Claims:
  private final case class Held(
      keyed: Boolean,
      handedOn: Boolean,
      interruption: Interruption,
      finishing: Boolean = false,
      taken: Boolean = false
  )
