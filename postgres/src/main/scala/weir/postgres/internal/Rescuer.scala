package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import weir.Service
import weir.postgres.WorkerConfig

/**
 * Frees the tasks of dead workers: every quarter of a heartbeat, running tasks whose owner is gone (its session ended
 * and its heartbeat is late, or it has not heartbeaten within `deadAfter`: see [[Sql.rescue]]) or whose
 * own lease expired go back to available at once, or to dead if they have used their attempts, or to
 * cancelled if their cancel was requested, with the reason in their errors; a periodic [[weir.Service]].
 * Every worker runs one: there is no leader to lose, the
 * statement skips rows another rescuer holds, and the guarded finishes make a late result of a rescued
 * claim change nothing. Worker rows silent for twenty times `deadAfter` are removed.
 */
private[postgres] object Rescuer:

  /** Rows per rescue statement; a full one is followed at once by another. */
  val batch: Int = 1000

  /** A rescue every quarter of `config`'s `heartbeat`. */
  def settings(config: WorkerConfig): Service.Settings =
    Service.Settings.periodic("rescue", config.heartbeat / 4)

  /**
   * The rescuer of `worker`, every quarter of its `heartbeat`, with its `deadAfter`; logs through `log` its
   * streaks of errors and, once per round that rescued any, how many tasks it rescued (INFO).
   */
  def resource[F[_]](run: Run[F], worker: WorkerContext, log: WorkerLog[F])(using
      F: Async[F]
  ): Resource[F, Unit] =
    import worker.{counters, sql}
    val deadAfter = worker.config.deadAfter
    val service = settings(worker.config)
    val logger = log.logger(service.name)
    // (available again, dead, cancelled), summed over the round's statements
    def rescueAll(sum: (Int, Int, Int)): F[(Int, Int, Int)] =
      run(sql.rescue(deadAfter.toMillis, batch)).flatMap { (rescued, dead, cancelled) =>
        val n = rescued + dead + cancelled
        val total = (sum._1 + rescued, sum._2 + dead, sum._3 + cancelled)
        F.delay(counters.rescued.addAndGet(n.toLong)) *>
          (if n >= batch then rescueAll(total) else F.pure(total))
      }
    def told(rescued: Int, dead: Int, cancelled: Int): F[Unit] =
      logger.info(log.context)(
        s"${log.prefix}: rescued ${rescued + dead + cancelled} task(s) of dead workers or expired leases " +
          s"($rescued available again, $dead dead, $cancelled cancelled)"
      ).whenA(rescued + dead + cancelled > 0)
    Resource.eval(log.faults(service.name, "the rescue", counters)).flatMap(faults =>
      Service.periodic(service, faults)(
        rescueAll((0, 0, 0)).flatMap(told.tupled) *> run(sql.forgetWorkers(deadAfter.toMillis * 20)).void
      )
    )
