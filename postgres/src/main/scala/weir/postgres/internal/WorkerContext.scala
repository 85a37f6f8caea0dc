package weir.postgres.internal

import weir.postgres.{Schema, WorkerConfig}

import java.util.concurrent.atomic.AtomicBoolean

/**
 * What the parts of one worker process share (its claimer, completer, session, heartbeat and maintenance
 * loops): who it is in the database (`owner`), its settings, its schema and statements, and its
 * bookkeeping, each piece safe to use from any thread. Built once by `DurableWorker.start`, after the
 * worker's registration.
 *
 * `limited`: whether the queue has a limit on running tasks, as its last claim said (see [[Claimer]]).
 */
private[postgres] final class WorkerContext(
    val owner: Long,
    val config: WorkerConfig,
    val schema: Schema,
    val sql: Sql,
    val claims: Claims,
    val counters: Counters,
    val liveness: Liveness,
    val limited: AtomicBoolean
):
  /** The claim statement of this worker: by its claimer, or by its session on a notification. */
  def claim: doobie.ConnectionIO[Sql.Claim] =
    sql.claim(config.queue, owner, config.claimBatch, config.lease.toMillis)
