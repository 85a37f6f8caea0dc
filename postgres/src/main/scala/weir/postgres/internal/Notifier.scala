package weir.postgres.internal

import cats.effect.kernel.{Async, Deferred}
import cats.syntax.all.*
import doobie.implicits.*
import doobie.util.transactor.Transactor

import java.sql.SQLException

/**
 * Answers a notification naming a worker's queue, on the session's thread: when the worker's claimer is
 * idle, with a claim on the session's own connection (`here`), whose rows go to the claimer (see
 * [[IdleGate]]), since this thread and its server process are the two that are awake; otherwise with a
 * wake-up of the claimer (`wake`). One part of [[WorkerSession]].
 */
private[postgres] final class Notifier[F[_]](here: Transactor[F])(using F: Async[F]):

  /**
   * Claims for `member`, or wakes its claimer. A worker whose heartbeat is late claims nothing here, as its
   * claimer claims nothing ([[Liveness]]): each of its claims would be refused at its start and handed back,
   * and the hand-back's notification would bring the next claim, refused again, for as long as the beat is
   * late. Its claimer is woken instead, and claims once a beat has committed. Uncancelable: a claim begun
   * here always completes the rows its claimer waits for. Fails with the connection's error, once the
   * claimer has its (empty) rows.
   */
  def notified(member: WorkerSession.Member[F]): F[Unit] =
    F.uncancelable(_ =>
      F.delay(member.worker.liveness.stale).flatMap(late =>
        if late then Notifier.poke(member)
        else member.gate.sessionClaims.flatMap(_.fold(Notifier.poke(member))(claim(member, _)))
      )
    )

  // the claimer waits for the rows of every claim begun here: none if it failed. A claim refused because
  // another worker's claim took the same key at once is no fault of the connection: the claimer is woken to
  // claim again, as after its own
  private def claim(member: WorkerSession.Member[F], into: Deferred[F, Sql.Claim]): F[Unit] =
    member.worker.claim.transact(here).attempt.flatMap {
      case Right(claim) => into.complete(claim).void
      case Left(e: SQLException) if e.getSQLState == Claimer.uniqueViolation =>
        into.complete(Sql.Claim.empty) *> Notifier.poke(member)
      case Left(e) => into.complete(Sql.Claim.empty) *> F.raiseError(e)
    }

private[postgres] object Notifier:

  /** Wakes `member`'s claimer (a wake-up already waiting is enough). */
  def poke[F[_]](member: WorkerSession.Member[F])(using F: Async[F]): F[Unit] = member.wake.tryOffer(()).void
