package weir.postgres.internal

import cats.effect.kernel.Deferred

import java.util.concurrent.atomic.AtomicInteger

/**
 * Who makes the next claim while the claimer is idle: the claimer itself (its poll, or a wake-up from
 * this process), or the worker's session, which receives a notification on a thread and a server process
 * that are both awake at that moment, and can claim without waking anything. Never both, and never
 * neither: a claim the session has begun belongs to the claimer, which waits for its rows (see
 * [[Claimer]] and [[WorkerSession]]).
 *
 * The rows travel through a `Deferred` made for each idle period: the claimer may stop waiting for it
 * (a poll, a wake-up, a stop) and read it later without anything being lost, which a queue's take, raced
 * and cancelled, does not promise.
 */
private[postgres] final class IdleGate[F[_]]:
  import IdleGate.*

  private val state = new AtomicInteger(Busy)
  // written before `state` is set to Waiting, read after a successful compare-and-set: the atomic's
  // ordering makes the write visible to the session's thread
  @volatile private var rows: Deferred[F, Sql.Claim] = scala.compiletime.uninitialized

  /** The claimer is about to wait; a claim by the session completes `into`. */
  def waiting(into: Deferred[F, Sql.Claim]): Unit =
    rows = into
    state.set(Waiting)

  /**
   * The claimer stops waiting on its own account (a poll, a wake-up, a stop): true if it did so before the
   * session began a claim; false if the session's claim is under way and will complete the period's rows.
   */
  def claimerResumes(): Boolean = state.compareAndSet(Waiting, Busy)

  /** The claimer has the session's rows and goes on. */
  def claimerHasRows(): Unit = state.set(Busy)

  /**
   * The session, on a notification: where to put the rows of the claim it must now make, or `None` if the
   * claimer is busy or already resuming (then a wake-up is enough).
   */
  def sessionClaims(): Option[Deferred[F, Sql.Claim]] =
    if state.compareAndSet(Waiting, SessionClaiming) then Some(rows) else None

private[postgres] object IdleGate:
  private val Busy = 0
  private val Waiting = 1
  private val SessionClaiming = 2
