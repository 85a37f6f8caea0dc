package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*

/**
 * Every `pollInterval`, marks the head of any ordering key left without one and wakes the queues concerned. The
 * marks are a hint the claim relies on to skip a key's waiting tasks (see [[Sql.nextHeads]]); an enqueue
 * whose transaction overlaps the removal of its key's last task can leave its task unmarked, and nothing
 * but this walk would then claim it. Every worker runs one (schema-wide, like the rescue), a
 * [[Periodic]] loop.
 */
private[postgres] object HeadRepair:

  /** The head repair of `worker`, every `pollInterval` of its (a key left unmarked waits no longer). */
  def resource[F[_]](run: Run[F], worker: WorkerContext, log: WorkerLog[F])(using
      F: Async[F]
  ): Resource[F, Unit] =
    import worker.sql
    Resource.eval(log.faults("repair", "the head repair", worker.counters)).flatMap(faults =>
      Periodic.resource(worker.config.pollInterval, faults)(
        run(sql.repairHeads.flatMap(queues => queues.distinct.traverse_(sql.wakeQueue))).void
      )
    )
