package weir.postgres

import cats.effect.kernel.Async
import cats.syntax.all.*
import doobie.*
import doobie.implicits.*
import weir.postgres.internal.AdminSql

import scala.concurrent.duration.*

/**
 * Operations on a schema's tasks: counts per queue and state, cancelling a task that has not started,
 * retrying or discarding a dead one, and pruning finished tasks. Every call is one short transaction (a
 * prune is one per batch), so none holds locks for long.
 */
final class TaskAdmin[F[_]] private (db: Database[F])(using F: Async[F]):

  private val sql = new AdminSql(db.schema)

  /** Counts per queue and state, queues in name order. */
  def stats: F[Vector[QueueStats]] = sql.stats.transact(db.transactor)

  /**
   * The registered workers, by id: each one's heartbeat, whether its session holds its lock now (so that
   * its death is seen within a heartbeat, see [[WorkerConfig.deadAfter]]), and how many tasks it runs. A
   * worker that stopped cleanly has no row; a dead one keeps its row until it is rescued and pruned.
   */
  def workers: F[Vector[WorkerInfo]] = sql.workers.transact(db.transactor)

  /**
   * The schedules of periodic tasks ([[Scheduler]]), by name: each one's queue, timing, policy for missed
   * ticks, last tick enqueued (none yet: `None`), next tick, and how many ticks' tasks were inserted. A
   * schedule no running process declares keeps its row, and its next tick falls behind the clock.
   */
  def schedules: F[Vector[ScheduleInfo]] = ScheduleInfo.list(db)

  /**
   * Cancels a task that is not running: it moves to `finished` as cancelled. A running task is left alone
   * (its worker owns it): the result says so.
   */
  def cancel(id: Long): F[Cancel] =
    db.run(sql.cancel(id)).flatMap {
      case true => F.pure(Cancel.Cancelled)
      case false =>
        sql.isRunning(id).transact(db.transactor).map(running =>
          if running then Cancel.Running else Cancel.NotFound
        )
    }

  /**
   * Puts a dead or cancelled task back to run now, with a fresh set of attempts (its errors are kept).
   * False if no dead or cancelled task has this id, or if its unique key is held by an unfinished task.
   */
  def retry(id: Long): F[Boolean] = db.run(sql.retry(id))

  /** Deletes a dead or cancelled task for good. False if there is none with this id. */
  def discard(id: Long): F[Boolean] = db.run(sql.discard(id))

  /**
   * Deletes finished tasks in `states` that finished more than `olderThan` ago, `batch` rows per
   * transaction (skipping rows another prune holds), and returns how many were deleted.
   */
  def prune(
      olderThan: FiniteDuration,
      states: Set[FinishedState] = FinishedState.values.toSet,
      batch: Int = 1000
  )
      : F[Long] =
    require(olderThan >= Duration.Zero, s"olderThan must be >= 0, was: $olderThan")
    require(batch > 0, s"batch must be > 0, was: $batch")
    require(states.nonEmpty, "states must not be empty")
    val names = states.toArray.map(_.name)
    def loop(total: Long): F[Long] =
      db.run(sql.prune(olderThan.toMillis, names, batch)).flatMap { n =>
        if n < batch then F.pure(total + n) else loop(total + n)
      }
    loop(0L)

object TaskAdmin:
  def apply[F[_]: Async](db: Database[F]): TaskAdmin[F] = new TaskAdmin(db)

/** One queue's tasks by state: ready to run now, scheduled later, running, and finished ones still kept. */
final case class QueueStats(
    queue: String,
    available: Long,
    scheduled: Long,
    running: Long,
    completed: Long,
    dead: Long,
    cancelled: Long
)

/**
 * A registered worker: its id (the lease owner of its tasks), its name, when it started and last
 * heartbeated, whether its session holds the worker's lock (false with notifications off, or while its
 * session reconnects), and how many tasks it has running.
 */
final case class WorkerInfo(
    id: Long,
    name: String,
    startedAt: java.time.Instant,
    heartbeatAt: java.time.Instant,
    sessionHeld: Boolean,
    running: Long
)

/** What [[TaskAdmin.cancel]] did. */
enum Cancel:
  case Cancelled, Running, NotFound

/** The states of a finished task. */
enum FinishedState(val name: String):
  case Completed extends FinishedState("completed")
  case Dead extends FinishedState("dead")
  case Cancelled extends FinishedState("cancelled")
