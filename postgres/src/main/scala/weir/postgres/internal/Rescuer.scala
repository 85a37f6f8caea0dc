package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*

/**
 * Frees the tasks of dead workers: every quarter of a heartbeat, running tasks whose owner is gone (its session ended
 * and its heartbeat is late, or it has not heartbeaten within `deadAfter`: see [[Sql.rescue]]) or whose
 * own lease expired go back to available at once, or to dead if they have used their attempts, or to
 * cancelled if their cancel was requested, with the reason in their errors; a [[Periodic]] loop. Every worker runs one: there is no leader to lose, the
 * statement skips rows another rescuer holds, and the guarded finishes make a late result of a rescued
 * claim change nothing. Worker rows silent for twenty times `deadAfter` are removed.
 */
private[postgres] object Rescuer:

  /** Rows per rescue statement; a full one is followed at once by another. */
  val batch: Int = 1000

  /** The rescuer of `worker`, every quarter of its `heartbeat`, with its `deadAfter`. */
  def resource[F[_]](run: Run[F], worker: WorkerContext)(using F: Async[F]): Resource[F, Unit] =
    import worker.{counters, sql}
    val deadAfter = worker.config.deadAfter
    def rescueAll: F[Unit] =
      run(sql.rescue(deadAfter.toMillis, batch)).flatMap { (rescued, dead, cancelled) =>
        val n = rescued + dead + cancelled
        F.delay(counters.rescued.addAndGet(n.toLong)) *> (if n >= batch then rescueAll else F.unit)
      }
    Periodic.resource(worker.config.heartbeat / 4, counters)(rescueAll *>
      run(sql.forgetWorkers(deadAfter.toMillis * 20)).void)
