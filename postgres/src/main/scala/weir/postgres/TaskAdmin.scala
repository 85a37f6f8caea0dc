package weir.postgres

import cats.effect.kernel.Async
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.Validation
import weir.postgres.internal.AdminSql

import scala.concurrent.duration.*

/**
 * Operations on a schema's queues and tasks: counts per queue and state, the queues' controls (pause,
 * resume, a limit on running tasks, a rate), cancelling a task (a running one through its worker),
 * retrying or discarding a dead or cancelled one, and pruning finished tasks. Every call is one short transaction (a prune is one
 * per batch), so none holds locks for long.
 *
 * ==Queue controls==
 * A queue's controls are stored in the database and enforced by the claim statement itself, so every
 * worker of the queue, in every process and on every machine, obeys the same setting, and a changed one
 * applies from the next claim that begins after it commits. Each change wakes the queue's workers
 * (NOTIFY) so that a resume or a raised limit is claimed at once; a worker that misses the notification
 * finds it at its next poll. A worker of version 5 of the schema obeys them too; its idle waits only poll.
 *
 * A claimed task counts as running from its claim until its finish (or its rescue, if its worker died),
 * wherever it waits meanwhile: a worker's claimed tasks wait in its pipeline's buffer, up to
 * [[WorkerConfig.claimBatch]] of them. So a pause stops claims, not the start of tasks already claimed;
 * and a limit on running tasks bounds claimed ones, which is what keeps it exact across processes (set a
 * small `claimBatch` on a limited queue so that one worker's buffer does not hold the whole limit).
 * Cancelling a call cancels its transaction; a change either commits whole or not at all.
 *
 * ==The audit log==
 * Each action (pause, resume, the limits, retry, cancel, discard; one entry per task of a `…Many` call) is
 * recorded in the schema's `audit` table in the action's own transaction, with [[operator]], its time, its
 * target and its outcome ([[AuditEntry]]): an entry exists if and only if the action committed, and an action
 * that did not apply (a retry of a completed task) is recorded as refused. A call that fails (an unknown
 * queue, a bad argument) records nothing. `TaskAdmin(db)` records its actions as [[Operator.code]]; name
 * whoever acts with `TaskAdmin(db, operator)` or [[as]]. Read the log with [[AuditLog]]; workers prune it
 * after [[Retention.audit]].
 */
final class TaskAdmin[F[_]] private (db: Database[F], val operator: Operator)(using F: Async[F]):

  private val sql = new AdminSql(db.schema)

  /** This admin, recording its actions as `operator`'s. */
  def as(operator: Operator): TaskAdmin[F] = new TaskAdmin(db, operator)

  /** Counts per queue and state, queues in name order. */
  def stats: F[Vector[QueueStats]] = sql.stats.transact(db.transactor)

  /**
   * Every queue with tasks, by name, and its tasks by state (see [[QueueDepth]]): the live ones, and those
   * finished in `finished`. One statement, so the counts are of one moment. Its cost is what it counts: each
   * part reads one index (the claim's partial indexes for the live tasks, `finished_by_state` for the
   * finished ones) and nothing else while the table's pages are all-visible (a vacuumed table's are). The
   * live tasks are the backlog; the completed tasks kept ([[WorkerConfig.keepCompleted]]) are the whole
   * history up to the retention, which is why they are counted only when asked for. For metrics, count
   * once per process and share the result: [[QueueDepths]].
   */
  def depths(
      finished: Set[FinishedState] = Set(FinishedState.Dead, FinishedState.Cancelled)
  ): F[Vector[QueueDepth]] = depthsAt(finished).map(_.queues)

  /** [[depths]] with the database's time of the count. */
  private[postgres] def depthsAt(finished: Set[FinishedState]): F[QueueDepths.Reading] =
    (sql.now, sql.depths(FinishedState.values.toVector.filter(finished))).mapN(QueueDepths.Reading.apply)
      .transact(db.transactor)

  /**
   * The registered workers, by id: each one's heartbeat, whether its session holds its lock now (so that
   * its death is seen within a heartbeat, see [[WorkerConfig.deadAfter]]), and how many tasks it runs. A
   * worker that stopped cleanly has no row; a dead one keeps its row until it is rescued and pruned.
   */
  def workers: F[Vector[WorkerInfo]] = sql.workers.transact(db.transactor)

  /** Every queue the database knows with its controls and running tasks, by name. */
  def queues: F[Vector[QueueInfo]] = sql.queueInfos.transact(db.transactor)

  /**
   * Makes `queue` known without setting a control (a worker's start does the same), so that its controls
   * can be set before any task or worker exists. Idempotent.
   */
  def addQueue(queue: String): F[Unit] =
    Validation.raise("TaskAdmin.addQueue", queueErrors(queue)) *> db.run(sql.addQueue(queue)).void

  private def queueErrors(queue: String): List[String] =
    Validation.check(queue != null && queue.nonEmpty, s"queue name must not be empty, was: '$queue'")

  /**
   * Pauses `queue`: from the next claim on, no worker claims its tasks; running tasks, and tasks already
   * claimed into a worker's buffer, go on. Idempotent. Fails with [[UnknownQueue]].
   */
  def pause(queue: String): F[Unit] =
    control(queue, AuditAction.Pause, None)(sql.setPaused(queue, paused = true))

  /** Resumes a paused `queue`, and wakes its workers. Idempotent. Fails with [[UnknownQueue]]. */
  def resume(queue: String): F[Unit] =
    control(queue, AuditAction.Resume, None)(sql.setPaused(queue, paused = false))

  /**
   * At most `max` tasks of `queue` running (claimed and not finished) at once across every worker, beside
   * each worker's own limit; `None` removes the limit. A lowered limit stops claims until enough running
   * tasks finish; it cancels none. Fails with [[weir.InvalidSettings]] for a `max` below 1 and with
   * [[UnknownQueue]].
   */
  def limitRunning(queue: String, max: Option[Int]): F[Unit] =
    Validation.raise("TaskAdmin.limitRunning", maxErrors(max)) *>
      control(queue, AuditAction.Limits, Some(maxDetail(max)))(sql.setMaxRunning(queue, max))

  /**
   * At most `rate.perSecond` tasks of `queue` claimed per second across every worker, in bursts of at most
   * `rate.burst` (see [[QueueRate]]); `None` removes the rate. Fails with [[weir.InvalidSettings]] naming
   * each bad value of `rate` ([[QueueRate.errors]]) and with [[UnknownQueue]].
   */
  def limitRate(queue: String, rate: Option[QueueRate]): F[Unit] =
    Validation.raise("QueueRate", rateErrors(rate)) *>
      control(queue, AuditAction.Limits, Some(rateDetail(rate)))(sql.setRate(queue, rate))

  /**
   * Sets both of `queue`'s limits, as [[limitRunning]] and [[limitRate]] do, in one transaction: no claim
   * sees one of them changed and the other not. Fails as they do, changing neither.
   */
  def limits(queue: String, maxRunning: Option[Int], rate: Option[QueueRate]): F[Unit] =
    Validation.raise("TaskAdmin.limits", maxErrors(maxRunning) ++ rateErrors(rate)) *>
      control(queue, AuditAction.Limits, Some(s"${maxDetail(maxRunning)}; ${rateDetail(rate)}"))(
        sql.setMaxRunning(queue, maxRunning) *> sql.setRate(queue, rate)
      )

  private def maxErrors(max: Option[Int]): List[String] =
    max.toList.flatMap(m => Validation.check(m > 0, s"a queue's limit on running tasks must be > 0, was: $m"))

  private def rateErrors(rate: Option[QueueRate]): List[String] = rate.toList.flatMap(_.errors)

  private def maxDetail(max: Option[Int]): String = s"max running: ${max.fold("none")(_.toString)}"

  private def rateDetail(rate: Option[QueueRate]): String =
    s"rate: ${rate.fold("none")(r => s"${r.perSecond}/s, burst ${r.burst}")}"

  private def control(queue: String, action: AuditAction, detail: Option[String])(
      change: ConnectionIO[Int]
  ): F[Unit] =
    Validation.raise("Operator", operator.errors) *>
      db.run(sql.known(queue).flatMap { known =>
        if known then
          change *> sql.wakeQueue(queue) *>
            sql.audit.record(operator, action, Some(queue), None, AuditOutcome.Done, detail).void
        else FC.raiseError[Unit](new UnknownQueue(queue))
      })

  /**
   * The schedules of periodic tasks ([[Scheduler]]), by name: each one's queue, timing, policy for missed
   * ticks, last tick enqueued (none yet: `None`), next tick, and how many ticks' tasks were inserted. A
   * schedule no running process declares keeps its row, and its next tick falls behind the clock.
   */
  def schedules: F[Vector[ScheduleInfo]] = ScheduleInfo.list(db)

  /**
   * Cancels the task `id`, for `reason` (kept among its errors, after `cancelled: `):
   *   - a task waiting to run moves to `finished` as cancelled at once ([[Cancel.Cancelled]]);
   *   - a running one is interrupted ([[Cancel.Requested]]): the request is stored on its row and its
   *     worker is told at commit, by a notification (or, if it misses it, by its next heartbeat, within
   *     half a [[WorkerConfig.heartbeat]]); the worker cancels the handler's fiber (its finalizers run) and
   *     the task moves to `finished` as cancelled. One whose worker is gone is cancelled by the rescue,
   *     and one that completes before its worker interrupts it stays completed;
   *   - a finished task is left as it is ([[Cancel.Finished]] says how it finished).
   * The task's row is locked for the call, so that no finish, claim or retry races it. Cancelling again a
   * task whose cancel is requested changes nothing but the stored reason. A worker of an earlier release
   * never hears of a request: its task runs to its end.
   */
  def cancel(id: Long, reason: String = defaultReason): F[Cancel] = cancelMany(Vector(id), reason).map(_.head)

  /** [[cancel]] of each of `ids`, in one transaction, in their order: each one's outcome. */
  def cancelMany(ids: Seq[Long], reason: String = defaultReason): F[Vector[Cancel]] =
    Validation.raise(
      "TaskAdmin.cancel",
      Validation.check(
        reason != null && reason.nonEmpty,
        s"a cancel's reason must not be empty, was: '$reason'"
      )
    ) *> Validation.raise("Operator", operator.errors) *>
      db.run(ids.toVector.traverse(id =>
        audited(id, AuditAction.Cancel)(sql.cancel(id, reason)) {
          case (Cancel.Cancelled, _) => (AuditOutcome.Done, Some(reason))
          case (Cancel.Requested, _) => (AuditOutcome.Requested, Some(reason))
          case (Cancel.Finished(state), _) => (AuditOutcome.Refused, Some(s"already ${state.name}"))
          case (Cancel.NotFound, _) => (AuditOutcome.NotFound, None)
        }
      ))

  /** The reason of a cancel that gives none: who asked for it. */
  private def defaultReason: String =
    if operator == Operator.code then "requested by an operator" else s"requested by ${operator.name}"

  /**
   * Puts a dead or cancelled task back to run now, with a fresh set of attempts (its errors are kept).
   * False if no dead or cancelled task has this id, or if its unique key is held by an unfinished task.
   */
  def retry(id: Long): F[Boolean] = retryMany(Vector(id)).map(_.head)

  /** [[retry]] of each of `ids`, in one transaction, in their order: whether each one was put back. */
  def retryMany(ids: Seq[Long]): F[Vector[Boolean]] =
    Validation.raise("Operator", operator.errors) *>
      db.run(ids.toVector.traverse(id =>
        audited(id, AuditAction.Retry)(sql.retry(id))(finishedOnly("retried"))
      ))

  /** Deletes a dead or cancelled task for good. False if there is none with this id. */
  def discard(id: Long): F[Boolean] = discardMany(Vector(id)).map(_.head)

  /** [[discard]] of each of `ids`, in one transaction: whether each one was deleted. */
  def discardMany(ids: Seq[Long]): F[Vector[Boolean]] =
    Validation.raise("Operator", operator.errors) *>
      db.run(ids.toVector.traverse(id =>
        audited(id, AuditAction.Discard)(sql.discard(id))(finishedOnly("discarded"))
      ))

  /** What a retry's or a discard's answer means, from the task's state before it. */
  private def finishedOnly(verb: String)(
      done: Boolean,
      before: Option[String]
  ): (AuditOutcome, Option[String]) =
    (done, before) match
      case (true, _) => (AuditOutcome.Done, None)
      case (false, None) => (AuditOutcome.NotFound, None)
      case (false, Some("dead" | "cancelled")) =>
        (AuditOutcome.Refused, Some("its unique key is held by a task that has not finished"))
      case (false, Some(state)) =>
        (AuditOutcome.Refused, Some(s"the task is $state: only a dead or cancelled task can be $verb"))

  /**
   * `act` on the task `id`, recorded in the same transaction with the outcome `judge` reads from its result
   * and the task's state before it.
   */
  private def audited[A](id: Long, action: AuditAction)(act: ConnectionIO[A])(
      judge: (A, Option[String]) => (AuditOutcome, Option[String])
  ): ConnectionIO[A] =
    sql.task(id).flatMap { before =>
      act.flatTap { result =>
        val (outcome, detail) = judge(result, before.map(_._2))
        sql.audit.record(operator, action, before.map(_._1), Some(id), outcome, detail)
      }
    }

  /**
   * Deletes finished tasks in `states` that finished more than `olderThan` ago, `batch` rows per
   * transaction (skipping rows another prune holds), and returns how many were deleted. Fails with
   * [[weir.InvalidSettings]] naming every bad argument (a negative `olderThan`, a `batch` below 1, no
   * `states`), deleting nothing.
   */
  def prune(
      olderThan: FiniteDuration,
      states: Set[FinishedState] = FinishedState.values.toSet,
      batch: Int = 1000
  )
      : F[Long] =
    val errors =
      Validation.check(olderThan >= Duration.Zero, s"olderThan must be >= 0, was: $olderThan") ++
        Validation.check(batch > 0, s"batch must be > 0, was: $batch") ++
        Validation.check(states.nonEmpty, "states must not be empty, was: none")
    val names = states.toArray.map(_.name)
    def loop(total: Long): F[Long] =
      db.run(sql.prune(olderThan.toMillis, names, batch)).flatMap { n =>
        if n < batch then F.pure(total + n) else loop(total + n)
      }
    Validation.raise("TaskAdmin.prune", errors) *> loop(0L)

object TaskAdmin:

  /** The admin of `db`'s schema, recording its actions as `operator`'s. */
  def apply[F[_]: Async](db: Database[F], operator: Operator = Operator.code): TaskAdmin[F] =
    new TaskAdmin(db, operator)
