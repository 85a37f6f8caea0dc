package weir.postgres.internal

import cats.effect.kernel.Async
import cats.syntax.all.*

/**
 * The session locks the workers' session holds on its connection, one per worker it serves (see
 * [[Sql.holdSession]]): the server frees them when the process dies, so that other workers rescue its
 * tasks within a heartbeat instead of after `deadAfter`. A lock still held by an earlier session of this
 * process that the server has not ended (its connection went silent rather than closed) cannot be taken:
 * that session is ended, and the lock taken at the next check. One part of [[WorkerSession]], run on its
 * thread: `execute` runs a statement on the session's connection and returns its update count.
 */
private[postgres] final class SessionLocks[F[_]](sql: Sql, execute: String => F[Int])(using F: Async[F]):
  import SessionLocks.Held

  /**
   * Takes the locks of `owners` not yet tried on this connection (at a `check`, of every owner without its
   * lock) and lets go those of the owners `held` locked that are no longer among `owners`. A check runs a
   * query even when there is nothing else to do, to prove the connection alive. Fails with the
   * connection's error; what it took before failing is lost with the connection.
   */
  def reconcile(held: Held, owners: Set[Long], check: Boolean): F[Held] =
    val toTake = owners.filter(o => !held.locked(o) && (check || !held.tried(o))).toVector.sorted
    val toRelease = (held.locked -- owners).toVector.sorted
    val taking = toTake.foldLeftM(Held(held.locked -- toRelease, held.tried.intersect(owners))) {
      (h, owner) =>
        execute(sql.holdSession(owner)).flatMap { taken =>
          if taken == 1 then F.pure(Held(h.locked + owner, h.tried - owner))
          else execute(sql.endEarlierSessions(owner)).as(Held(h.locked, h.tried + owner))
        }
    }
    toRelease.traverse_(owner => execute(sql.releaseSession(owner))) *> taking.flatTap(_ =>
      execute("SELECT 1").void.whenA(check && toTake.isEmpty && toRelease.isEmpty)
    )

private[postgres] object SessionLocks:

  /**
   * What a connection holds: `locked`, the owners whose lock it took; `tried`, those it could not take,
   * tried again at the next check.
   */
  final case class Held(locked: Set[Long], tried: Set[Long])

  /** What a new connection holds: nothing. */
  val none: Held = Held(Set.empty, Set.empty)
