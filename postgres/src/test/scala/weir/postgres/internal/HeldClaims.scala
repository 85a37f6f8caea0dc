package weir.postgres.internal

import cats.effect.{IO, Resource}
import cats.syntax.all.*
import weir.Interruption
import weir.postgres.{Database, NewTask, TaskQueue, WorkerConfig}

import java.util.concurrent.atomic.AtomicBoolean

/**
 * A worker's parts without the worker: `n` tasks enqueued to `config.queue` and claimed by a registered
 * worker, whose context's [[Claims]] hold the claims, for the suites of single components (the completer,
 * the heartbeat). `interruptions` are the claims' switches, by token.
 */
final case class HeldClaims(
    worker: WorkerContext,
    tokens: Vector[Long],
    interruptions: Map[Long, Interruption]
)

object HeldClaims:

  def of(db: Database[IO], n: Int, config: WorkerConfig): Resource[IO, HeldClaims] =
    val sql = new Sql(db.schema)
    for
      run <- db.workerPool(size = 2)
      owner <-
        Resource.eval(run(sql.register(config.name, config.heartbeat.toMillis) <* sql.addQueue(config.queue)))
      _ <- Resource.eval(TaskQueue[IO, Int](db, config.queue).enqueueMany((1 to n).map(NewTask(_))))
      claim <- Resource.eval(run(sql.claim(config.queue, owner, n, config.lease.toMillis)))
    yield
      val claims = new Claims
      val switches = claim.rows.map(r => r.token -> claims.add(r.token, keyed = false)).toMap
      val context = new WorkerContext(
        owner,
        config,
        db.schema,
        sql,
        claims,
        new Counters,
        new Liveness(config.heartbeat, claims),
        new AtomicBoolean
      )
      HeldClaims(context, claim.rows.map(_.token), switches)
