package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import weir.Service
import weir.postgres.Retention

import scala.concurrent.duration.*

/**
 * Deletes finished tasks, audit entries and ended batches past their retention, every minute, a round of rows
 * per transaction so that a large prune never holds many locks for long ([[Rounds]], which `TaskAdmin.prune` runs too); rows
 * another worker's pruner holds are skipped. A periodic [[weir.Service]].
 */
private[postgres] object Pruner:

  val batch: Int = 1000

  /** A prune every minute. */
  val settings: Service.Settings = Service.Settings.periodic("prune", 1.minute)

  /**
   * The pruner of a worker with `retention`, its errors counted in `counters` and logged through `log`;
   * every minute unless `settings` say otherwise.
   */
  def resource[F[_]](
      run: Run[F],
      sql: AdminSql,
      retention: Retention,
      log: WorkerLog[F],
      counters: Counters,
      settings: Service.Settings = Pruner.settings
  )(using F: Async[F]): Resource[F, Unit] =
    def prune(state: String, olderThan: FiniteDuration): F[Long] =
      Rounds.drain(run, batch)(sql.prune(olderThan.toMillis, Array(state), batch))
    Resource.eval(log.faults(settings.name, "the prune", counters)).flatMap(faults =>
      Service.periodic(settings, faults)(
        retention.byState.traverse_((state, olderThan) => prune(state.name, olderThan)) *>
          Rounds.drain(run, batch)(sql.audit.prune(retention.audit.toMillis, batch)) *>
          run(sql.hasBatches).flatMap(has =>
            Rounds.drain(run, batch)(sql.pruneBatches(retention.batches.toMillis, batch)).whenA(has)
          )
      )
    )
