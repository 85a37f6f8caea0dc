package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import weir.postgres.Retention

import scala.concurrent.duration.*

/**
 * Deletes finished tasks and audit entries past their retention, every `every`, a batch per transaction so
 * a large prune never holds many locks for long; rows another worker's pruner holds are skipped. A
 * [[Periodic]] loop.
 */
private[postgres] object Pruner:

  val batch: Int = 1000

  /** How often a worker prunes. */
  val every: FiniteDuration = 1.minute

  def resource[F[_]](
      run: Run[F],
      sql: AdminSql,
      retention: Retention,
      every: FiniteDuration,
      faults: Faults[F]
  )(
      using F: Async[F]
  ): Resource[F, Unit] =
    def prune(state: String, olderThan: FiniteDuration): F[Long] =
      Batches.drain(run, batch)(sql.prune(olderThan.toMillis, Array(state), batch))
    Periodic.resource(every, faults)(
      retention.byState.traverse_((state, olderThan) => prune(state.name, olderThan)) *>
        Batches.drain(run, batch)(sql.audit.prune(retention.audit.toMillis, batch)).void
    )
