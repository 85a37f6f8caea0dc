package weir.postgres

import cats.effect.kernel.Async
import cats.syntax.all.*
import weir.Validation
import weir.postgres.internal.ControlSql
import weir.postgres.internal.ControlSql.Change

/**
 * A schema's queue controls ([[TaskAdmin.queues]]): pause, resume, a limit on running tasks and a rate, each
 * change recorded in the audit log as [[operator]]'s (see [[TaskAdmin]]). Every change is one statement,
 * which checks the queue, changes its row, records the entry and wakes its workers in one round trip; it
 * commits whole or not at all. A call cancelled while its statement runs may still be done, as the server
 * commits a statement that reached it; its entry then says so. Concurrent calls are allowed: changes of one
 * queue take turns on its row.
 *
 * ==Where they apply==
 * A queue's controls are stored in the database and enforced by the claim statement itself, so every
 * worker of the queue, in every process and on every machine, obeys the same setting, and a changed one
 * applies from the next claim that begins after it commits. Each change wakes the queue's workers
 * (NOTIFY) so that a resume or a raised limit is claimed at once; a worker that misses the notification
 * finds it at its next poll. A worker of version 5 of the schema obeys them too; its idle waits only poll.
 *
 * ==Running means claimed==
 * A claimed task counts as running from its claim until its finish (or its rescue, if its worker died),
 * wherever it waits meanwhile: a worker's claimed tasks wait in its pipeline's buffer, up to
 * [[WorkerConfig.claimBatch]] of them. So a pause stops claims, not the start of tasks already claimed;
 * and a limit on running tasks bounds claimed ones, which is what keeps it exact across processes (set a
 * small `claimBatch` on a limited queue so that one worker's buffer does not hold the whole limit).
 *
 * ==Errors==
 * A control set on a queue the database does not know fails with [[UnknownQueue]]; a bad limit, rate or
 * [[Operator]] with [[weir.InvalidSettings]] naming every bad value. A call that fails changes nothing and
 * records nothing.
 */
final class QueueControls[F[_]] private[postgres] (db: Database[F], val operator: Operator)(
    using F: Async[F]
):

  private val sql = new ControlSql(db.schema)

  /**
   * Makes `queue` known without setting a control (a worker's start does the same), so that its controls
   * can be set before any task or worker exists. Idempotent; not an action, so not recorded.
   */
  def add(queue: String): F[Unit] =
    Validation.raise("QueueControls.add", queueErrors(queue)) *> db.run.single(sql.addQueue(queue)).void

  private def queueErrors(queue: String): List[String] =
    Validation.check(queue != null && queue.nonEmpty, s"queue name must not be empty, was: '$queue'")

  /**
   * Pauses `queue`: from the next claim on, no worker claims its tasks; running tasks, and tasks already
   * claimed into a worker's buffer, go on. Idempotent. Fails with [[UnknownQueue]].
   */
  def pause(queue: String): F[Unit] =
    control(queue, Change(paused = Some(true)), AuditAction.Pause, None)

  /** Resumes a paused `queue`, and wakes its workers. Idempotent. Fails with [[UnknownQueue]]. */
  def resume(queue: String): F[Unit] =
    control(queue, Change(paused = Some(false)), AuditAction.Resume, None)

  /**
   * At most `max` tasks of `queue` running (claimed and not finished) at once across every worker, beside
   * each worker's own limit; `None` removes the limit. A lowered limit stops claims until enough running
   * tasks finish; it cancels none. Fails with [[weir.InvalidSettings]] for a `max` below 1 and with
   * [[UnknownQueue]].
   */
  def limitRunning(queue: String, max: Option[Int]): F[Unit] =
    Validation.raise("QueueControls.limitRunning", maxErrors(max)) *>
      control(queue, Change(maxRunning = Some(max)), AuditAction.Limits, Some(maxDetail(max)))

  /**
   * At most `rate.perSecond` tasks of `queue` claimed per second across every worker, in bursts of at most
   * `rate.burst` (see [[QueueRate]]); `None` removes the rate. Fails with [[weir.InvalidSettings]] naming
   * each bad value of `rate` ([[QueueRate.errors]]) and with [[UnknownQueue]].
   */
  def limitRate(queue: String, rate: Option[QueueRate]): F[Unit] =
    Validation.raise("QueueRate", rateErrors(rate)) *>
      control(queue, Change(rate = Some(rate)), AuditAction.Limits, Some(rateDetail(rate)))

  /**
   * Sets both of `queue`'s limits, as [[limitRunning]] and [[limitRate]] do, in one transaction: no claim
   * sees one of them changed and the other not. Fails as they do, changing neither.
   */
  def limits(queue: String, maxRunning: Option[Int], rate: Option[QueueRate]): F[Unit] =
    Validation.raise("QueueControls.limits", maxErrors(maxRunning) ++ rateErrors(rate)) *>
      control(
        queue,
        Change(maxRunning = Some(maxRunning), rate = Some(rate)),
        AuditAction.Limits,
        Some(s"${maxDetail(maxRunning)}; ${rateDetail(rate)}")
      )

  private def maxErrors(max: Option[Int]): List[String] =
    max.toList.flatMap(m => Validation.check(m > 0, s"a queue's limit on running tasks must be > 0, was: $m"))

  private def rateErrors(rate: Option[QueueRate]): List[String] = rate.toList.flatMap(_.errors)

  private def maxDetail(max: Option[Int]): String = s"max running: ${max.fold("none")(_.toString)}"

  private def rateDetail(rate: Option[QueueRate]): String =
    s"rate: ${rate.fold("none")(r => s"${r.perSecond}/s, burst ${r.burst}")}"

  /**
   * `change` on `queue` with its audit entry and the wake-up of its workers, in one statement (so one round
   * trip, committed as it ends); [[UnknownQueue]], changing and recording nothing, if it is unknown.
   */
  private def control(queue: String, change: Change, action: AuditAction, detail: Option[String]): F[Unit] =
    Validation.raise("Operator", operator.errors) *>
      db.run.single(sql.control(queue, change, action, detail, operator)).flatMap(known =>
        F.raiseError(new UnknownQueue(queue)).unlessA(known)
      )
