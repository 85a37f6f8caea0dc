package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import weir.Service
import weir.postgres.WorkerConfig

import scala.concurrent.duration.FiniteDuration

/**
 * Keeps a worker alive in the database: twice every `heartbeat` it writes its heartbeat (registering again if a
 * rescuer had removed it) and extends the leases of the claims it holds that it claimed or last extended a
 * quarter of a lease ago or more ([[extendAfter]], [[Claims.due]]), and only those. The same statement
 * names, of all the claims it holds, those whose rows are no longer this worker's: those another worker rescued
 * are refused as taken in [[Claims]] and counted. It also names the claims whose cancel was requested, whose
 * tasks are told to stop: the fallback of the cancel's notification ([[WorkerSession]]).
 * Each beat that commits is reported to [[Liveness]] with the moment it was sent; beating twice per
 * period keeps the last one young enough for the worker's claims to start (see there).
 * Runs on the worker's maintenance pool, so a pool busy with claims and handlers never delays it; a
 * periodic [[weir.Service]].
 */
private[postgres] object Heartbeat:

  /**
   * How old a claim's lease is, at least, when a beat extends it: a quarter of a lease. A beat comes every
   * half heartbeat, which is less than a quarter of a lease (`lease > 2 × heartbeat`), so a lease is extended
   * while more than half of it is left, and beats may fail for a quarter of a lease before one is at risk.
   * An extension lost after it was reported (the beat commits asynchronously, and a server that crashes
   * loses its last commits) leaves the lease it had, more than half, and the beats extend it again from a
   * quarter of a lease later: before it ends, by `lease / 4 - heartbeat / 2` at least.
   */
  def extendAfter(lease: FiniteDuration): FiniteDuration = lease / 4

  /** A beat twice per `heartbeat` of `config`, the first one after half a period (the registration beat). */
  def settings(config: WorkerConfig): Service.Settings =
    Service.Settings.periodic("heartbeat", config.heartbeat / 2)

  /**
   * The heartbeat of `worker`, every half of its `heartbeat`, extending leases to its `lease`; logs through
   * `log` its streaks of errors and the beats that find this worker taken for dead (WARN, with how many of
   * its claims another worker rescued).
   */
  def resource[F[_]](run: Run[F], worker: WorkerContext, log: WorkerLog[F])(using
      F: Async[F]
  ): Resource[F, Unit] =
    import worker.{claims, counters, liveness, owner, sql}
    val every = worker.config.heartbeat
    val service = settings(worker.config)
    val lease = worker.config.lease
    val after = extendAfter(lease).toNanos
    val logger = log.logger(service.name)
    def takenForDead(n: Int): F[Unit] =
      logger.warn(log.context)(
        s"${log.prefix}: taken for dead: another worker rescued $n of its running claims, this worker having " +
          s"been silent for longer than deadAfter (${worker.config.deadAfter}); those tasks may run twice " +
          "(a long pause, a starved CPU or a partition: see WorkerStats.taken)"
      )
    val beat =
      F.delay {
        val sentAt = System.nanoTime()
        (sentAt, claims.tokens, claims.due(sentAt, after))
      }.flatMap { (sentAt, tokens, due) =>
        run.single(sql.beat(owner, worker.config.name, every.toMillis, tokens, due, lease.toMillis))
          .flatMap(found =>
            // the claims found gone are refused as taken before the beat counts: none of them starts after it.
            // Counted and logged as one step: a heartbeat stopped in between would count what it never told
            F.uncancelable(_ =>
              F.delay {
                claims.extended(due, sentAt)
                val taken = claims.taken(found.gone)
                counters.taken.addAndGet(taken.toLong)
                found.cancels.foreach((token, reason) => claims.interrupt(token, reason): Unit)
                liveness.confirmed(sentAt)
                taken
              }.flatMap(taken => takenForDead(taken).whenA(taken > 0))
            )
          )
      }
    Resource.eval(log.faults(service.name, "the heartbeat", counters)).flatMap(Service.periodic(
      service,
      _
    )(beat))
