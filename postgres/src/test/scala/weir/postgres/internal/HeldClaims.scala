package weir.postgres.internal

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import weir.postgres.{Database, Job, NewTask, TaskQueue, WorkerConfig}

import java.util.concurrent.atomic.AtomicBoolean

/**
 * A worker's parts without the worker, for the suites of single components (the claimer, the completer,
 * the heartbeat): `tokens` are claims of `config.queue`'s tasks by a registered worker, held in its
 * context's [[Claims]]; `claims` are those claims, by token.
 */
final case class HeldClaims(
    worker: WorkerContext,
    tokens: Vector[Long],
    claims: Map[Long, Claims.Claim]
)

object HeldClaims:

  /** Where the parts of `worker` log: nowhere. */
  def silent(worker: WorkerContext): WorkerLog[IO] =
    new WorkerLog[IO](org.typelevel.log4cats.noop.NoOpFactory[IO], worker.config.queue, worker.owner)

  /** The context of a worker registered for `config.queue`, holding no claim. */
  def context(db: Database[IO], config: WorkerConfig): Resource[IO, WorkerContext] =
    val sql = new Sql(db.schema)
    db.workerPool(size = 1).evalMap { run =>
      run(sql.register(config.name, config.heartbeat.toMillis) <* sql.addQueue(config.queue)).map { owner =>
        val claims = new Claims
        new WorkerContext(
          owner,
          config,
          db.schema,
          sql,
          claims,
          new Counters,
          new Liveness(config.heartbeat),
          new AtomicBoolean
        )
      }
    }

  /** `n` tasks enqueued and claimed by a worker whose [[Claims]] hold them. */
  def of(db: Database[IO], n: Int, config: WorkerConfig): Resource[IO, HeldClaims] =
    for
      worker <- context(db, config)
      run <- db.workerPool(size = 1)
      _ <- Resource.eval(TaskQueue[IO, Int](db, config.queue).enqueueMany((1 to n).map(NewTask(_))))
      claim <- Resource.eval(run(worker.sql.claim(config.queue, worker.owner, n, config.lease.toMillis)))
    yield
      val claimed = new Job.Claimed(worker.sql, config.keepCompleted, worker.liveness)
      val held =
        claim.rows.map(r => r.token -> worker.claims.add(r.token, keyed = false, claimed, claim.sentAt)).toMap
      HeldClaims(worker, claim.rows.map(_.token), held)
