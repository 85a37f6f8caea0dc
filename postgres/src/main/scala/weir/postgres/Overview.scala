package weir.postgres

import cats.effect.kernel.Async
import cats.syntax.all.*
import weir.postgres.internal.AdminSql

/**
 * What a schema holds, read for an operator ([[TaskAdmin.overview]]): counts per queue and state, the
 * queues' depths, their controls, the workers and the schedules. Each call is one read-only transaction,
 * weir's own (on its JDBC pool, see [[TaskBrowser]]); none changes anything or is recorded in the audit log.
 */
final class Overview[F[_]] private[postgres] (db: Database[F], sql: AdminSql)(using F: Async[F]):

  /** Counts per queue and state, queues in name order. */
  def stats: F[Vector[QueueStats]] = db.run(sql.stats)

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
    db.run(
      (sql.now, sql.depths(FinishedState.values.toVector.filter(finished))).mapN(QueueDepths.Reading.apply)
    )

  /** Every queue the database knows with its controls ([[QueueControls]]) and running tasks, by name. */
  def queues: F[Vector[QueueInfo]] = db.run(sql.queueInfos)

  /**
   * The registered workers, by id: each one's heartbeat, whether its session holds its lock now (so that
   * its death is seen within a heartbeat, see [[WorkerConfig.deadAfter]]), and how many tasks it runs. A
   * worker that stopped cleanly has no row; a dead one keeps its row until it is rescued and pruned.
   */
  def workers: F[Vector[WorkerInfo]] = db.run(sql.workers)

  /**
   * The schedules of periodic tasks ([[Scheduler]]), by name: each one's queue, timing, policy for missed
   * ticks, last tick enqueued (none yet: `None`), next tick, and how many ticks' tasks were inserted. A
   * schedule no running process declares keeps its row, and its next tick falls behind the clock.
   */
  def schedules: F[Vector[ScheduleInfo]] = ScheduleInfo.list(db)
