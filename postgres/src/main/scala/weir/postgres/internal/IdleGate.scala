package weir.postgres.internal

import cats.effect.kernel.{Concurrent, Deferred, Ref}
import cats.syntax.all.*

/**
 * Who makes the next claim while the claimer is idle: the claimer itself (its poll, or a wake-up from
 * this process), or the worker's session, which receives a notification on a thread and a server process
 * that are both awake at that moment, and can claim without waking anything. Never both, and never
 * neither: a claim the session has begun belongs to the claimer, which waits for its rows (see
 * [[Claimer]] and [[WorkerSession]]).
 *
 * The turn is one [[IdleGate.Turn]] in a `Ref`, moved by the four transitions below, each a pure function
 * of the turn ([[IdleGate.step]]). The rows travel through a `Deferred` made for each idle period: the
 * claimer may stop waiting for it (a poll, a wake-up, a stop) and read it later without anything being
 * lost, which a queue's take, raced and cancelled, does not promise.
 *
 * Concurrent callers: the claimer's one fiber calls [[waiting]], [[resume]] and [[hasRows]]; the session's
 * thread calls [[sessionClaims]]. Each is one atomic change of the turn, so of a claimer resuming and a
 * session claiming at once exactly one wins.
 */
private[postgres] final class IdleGate[F[_]] private (turn: Ref[F, IdleGate.Turn[F]]):
  import IdleGate.{Event, step}

  /** The claimer is about to wait; a claim by the session completes `into`. */
  def waiting(into: Deferred[F, Sql.Claim]): F[Unit] = turn.update(step(_, Event.Waits(into))._1)

  /**
   * The claimer stops waiting on its own account (a poll, a wake-up, a stop): `None` if it did so before
   * the session began a claim, and it claims itself; otherwise the rows the session's claim, under way,
   * will complete, which are this idle period's and the claimer's to take.
   */
  def resume: F[Option[Deferred[F, Sql.Claim]]] = turn.modify(step(_, Event.ClaimerResumes()))

  /** The claimer has the session's rows and goes on. */
  def hasRows: F[Unit] = turn.update(step(_, Event.ClaimerHasRows())._1)

  /**
   * The session, on a notification: where to put the rows of the claim it must now make, or `None` if the
   * claimer is busy or already resuming (then a wake-up is enough).
   */
  def sessionClaims: F[Option[Deferred[F, Sql.Claim]]] = turn.modify(step(_, Event.SessionClaims()))

private[postgres] object IdleGate:

  /** A gate whose claimer is busy. */
  def apply[F[_]](using F: Concurrent[F]): F[IdleGate[F]] =
    F.ref[Turn[F]](Turn.Busy()).map(new IdleGate(_))

  /** Whose turn it is to claim. */
  enum Turn[F[_]]:
    /** The claimer claims, or goes on with rows: a notification only wakes it. */
    case Busy()

    /** The claimer waits: the session may take the turn, the rows of its claim going to `rows`. */
    case Waiting(rows: Deferred[F, Sql.Claim])

    /** The session's claim is under way: the claimer takes its `rows`. */
    case SessionClaiming(rows: Deferred[F, Sql.Claim])

  /** What moves the turn. */
  enum Event[F[_]]:
    case Waits(into: Deferred[F, Sql.Claim])
    case ClaimerResumes()
    case ClaimerHasRows()
    case SessionClaims()

  /**
   * The turn after `event`, and the rows its party is to wait for or complete, if any.
   *
   * Invariant: the session claims only from `Waiting`, and only once per idle period (it leaves
   * `SessionClaiming`, which only the claimer's `ClaimerHasRows` ends); the claimer resumes on its own only
   * from `Waiting`. So in each idle period exactly one of the two claims.
   */
  def step[F[_]](turn: Turn[F], event: Event[F]): (Turn[F], Option[Deferred[F, Sql.Claim]]) =
    (turn, event) match
      case (_, Event.Waits(into)) => (Turn.Waiting(into), None)
      case (Turn.Waiting(_), Event.ClaimerResumes()) => (Turn.Busy(), None)
      case (Turn.SessionClaiming(rows), Event.ClaimerResumes()) => (turn, Some(rows))
      case (_, Event.ClaimerHasRows()) => (Turn.Busy(), None)
      case (Turn.Waiting(rows), Event.SessionClaims()) => (Turn.SessionClaiming(rows), Some(rows))
      // busy, or the session's claim already under way: a wake-up is enough; a claimer that resumes while
      // busy has nothing to take back
      case (_, _) => (turn, None)
