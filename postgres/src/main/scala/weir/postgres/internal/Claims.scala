package weir.postgres.internal

import weir.Tracked
import weir.postgres.Job

import java.util.concurrent.ConcurrentHashMap

/**
 * The claims a worker holds and has not yet finished in the database, by token, each a [[Claims.Claim]]:
 * a [[weir.Tracked]] item, whose life core's state machine keeps. The claimer adds a claim before handing
 * its task on; the completer forgets it once its finish has committed ([[finished]]). The heartbeat extends
 * the leases of these claims only, so a task this process forgot is not kept alive by it, and of those
 * only the ones [[due]]: each claim knows the earliest its lease can end (`leaseFrom + lease` on this
 * worker's clock), set by its claim and moved on by each beat that extended it ([[extended]]).
 *
 * A claim's events, and who sends them: its task's start and attempts (the engine, through its job); an
 * operator's cancel ([[interrupt]]: the worker's session or heartbeat); its outcome, read from the
 * pipeline, which ends it (`done`: the worker's reader of outcomes), or the claimer's hand-back of a claim
 * that never reaches the pipeline (a payload that does not decode); its row found gone without an end
 * ([[taken]]: the heartbeat); and its finish, committed ([[finished]]: the completer).
 *
 * A claim whose end is known is being finished: its row may be gone at any moment for that reason. A claim
 * whose row is gone without that is taken: another worker rescued it, having taken this one for dead (its
 * heartbeat fell silent for `deadAfter`), and it may already run there; it never starts, nor starts another
 * attempt, here.
 *
 * Whether a claim may have run decides how the worker's last step hands it back: one whose task never
 * started here (its job's start was never granted, or it ended not started) goes back uncounted; one that
 * may have run goes back counted.
 */
private[postgres] final class Claims:
  import Claims.Claim

  private val held = new ConcurrentHashMap[Long, Claim]

  /**
   * Adds a claim, whose job checks its start and completes it through `claimed`, and whose lease was set
   * no earlier than `sentAt` (`System.nanoTime`, read before its claim was sent: [[Sql.Claim]]).
   */
  def add(token: Long, keyed: Boolean, claimed: Job.Claimed, sentAt: Long): Claim =
    val claim = new Claim(token, keyed, claimed, sentAt)
    held.put(token, claim)
    claim

  /** The claim `token`, if this worker holds it. */
  def get(token: Long): Option[Claim] = Option(held.get(token))

  /**
   * Tells the task of the claim `token` to stop, for `reason` (its cancel was requested): interrupted if it
   * runs, refused if it has not started. True if this worker holds the claim, without its end yet, and it
   * was not told before.
   */
  def interrupt(token: Long, reason: String): Boolean =
    get(token).exists(_.interrupt(s"cancelled: $reason") match
      case Tracked.Stop.Already | Tracked.Stop.TooLate => false
      case _ => true)

  /**
   * Refuses, as taken, those of `tokens` whose rows the database no longer holds for this worker, unless
   * their end is known (their finish may be what removed them); returns how many were newly refused. The
   * caller reads `tokens` before asking the database and calls this after: a finish that commits in
   * between had its end known before it could commit.
   */
  def taken(tokens: Iterable[Long]): Int =
    var n = 0
    tokens.foreach(token =>
      get(token).foreach(_.refuse(Liveness.taken) match
        case Tracked.Stop.Already | Tracked.Stop.TooLate => ()
        case _ => n += 1)
    )
    n

  /** The finish of the claim `token` has committed: it is finished and forgotten. True if it had a key. */
  def finished(token: Long): Boolean =
    Option(held.remove(token)).exists { claim =>
      claim.finish(): Unit
      claim.keyed
    }

  def isKeyed(token: Long): Boolean = get(token).exists(_.keyed)

  def size: Int = held.size
  def tokens: Array[Long] = select(_ => true)

  /**
   * The claims whose lease was set or last extended at least `after` before `now` (both `System.nanoTime`):
   * those a beat sent at `now` extends. Every other claim's lease ends no earlier than `now - after + lease`.
   */
  def due(now: Long, after: Long): Array[Long] = select(claim => now - claim.leaseFrom >= after)

  /**
   * A beat sent at `sentAt` extended the leases of `tokens` to the server's `now()` at that beat plus a
   * lease, which is no earlier than `sentAt` plus a lease. Only the heartbeat calls it, after its beat
   * committed.
   */
  def extended(tokens: Array[Long], sentAt: Long): Unit =
    tokens.foreach(token =>
      get(token).foreach(claim => if sentAt - claim.leaseFrom > 0 then claim.leaseFrom = sentAt)
    )

  /** The claims whose task may have run here: its start was granted, and it did not end not started. */
  def maybeStarted: Array[Long] = select(_.state.mayHaveRun)

  private def select(p: Claim => Boolean): Array[Long] =
    val out = Array.newBuilder[Long]
    held.forEach((token, claim) => if p(claim) then out.addOne(token): Unit)
    out.result()

private[postgres] object Claims:

  /**
   * One claim: its token, whether its task has an ordering key, and its life. Its job's start asks, in
   * this order, whether it was cancelled or taken (its state), whether this worker's heartbeat is too late
   * for any claim to start ([[Liveness]]), and then starts it: a start refused for lateness leaves it
   * unstarted, to be handed back uncounted.
   */
  final class Claim(val token: Long, val keyed: Boolean, claimed: Job.Claimed, sentAt: Long)
      extends Tracked,
        Job.Life:

    /** When its lease was last set, no later than the server's `now()` that set it (`System.nanoTime`). */
    @volatile private[internal] var leaseFrom: Long = sentAt

    def tryStart(): Option[String] = state.refusal.orElse(claimed.liveness.refusal).orElse(start())
    def complete: doobie.ConnectionIO[Boolean] = claimed.complete(token, keyed)
    def parents(id: Long): doobie.ConnectionIO[Vector[weir.postgres.Parent]] = claimed.parents(id)
    def batch(id: Long): doobie.ConnectionIO[Option[weir.postgres.BatchProgress]] = claimed.batch(id)
    override def toString: String = s"Claim($token, $state)"
