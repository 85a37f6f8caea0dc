package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import weir.Service
import weir.postgres.WorkerConfig

/**
 * Every `pollInterval`, marks the head of any ordering key left without one and wakes the queues concerned. The
 * marks are a hint the claim relies on to skip a key's waiting tasks (see [[Sql.nextHeads]]); an enqueue
 * whose transaction overlaps the removal of its key's last task can leave its task unmarked, and nothing
 * but this walk would then claim it. Every worker runs one (schema-wide, like the rescue), a periodic
 * [[weir.Service]].
 */
private[postgres] object HeadRepair:

  /** A walk every `pollInterval` of `config` (a key left unmarked waits no longer than a poll). */
  def settings(config: WorkerConfig): Service.Settings =
    Service.Settings.periodic("repair", config.pollInterval)

  /** The head repair of `worker`, as its [[settings]] say. */
  def resource[F[_]](run: Run[F], worker: WorkerContext, log: WorkerLog[F])(using
      F: Async[F]
  ): Resource[F, Unit] =
    import worker.sql
    val service = settings(worker.config)
    Resource.eval(log.faults(service.name, "the head repair", worker.counters)).flatMap(faults =>
      Service.periodic(service, faults)(
        run(sql.repairHeads.flatMap(queues => queues.distinct.traverse_(sql.wakeQueue))).void
      )
    )
