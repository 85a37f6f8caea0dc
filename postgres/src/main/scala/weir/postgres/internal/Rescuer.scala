package weir.postgres.internal

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import weir.Service
import weir.postgres.WorkerConfig

import java.util.concurrent.atomic.AtomicLong

/**
 * Frees the tasks of dead workers: every quarter of a heartbeat, running tasks whose owner is gone (its session ended
 * and its heartbeat is late, or it has not heartbeaten within `deadAfter`: see [[Sql.rescue]]), and every
 * quarter of a lease those whose own lease expired, go back to available at once, or to dead if they have used
 * their attempts, or to cancelled if their cancel was requested, with the reason in their errors; a periodic
 * [[weir.Service]]. The two cadences differ because of what each costs: finding the gone owners reads an
 * index entry per (queue, owner) pair, finding expired leases reads every running task, and a live worker's
 * beat extends its leases, so an expired one is rare (a claim its worker lost track of) and a quarter of a
 * lease late is soon enough.
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
   * Rounds per look at the leases: a quarter of `config`'s `lease` in rounds of a quarter of its `heartbeat`
   * (at least one; the validated config has a lease longer than two heartbeats, so eight at least).
   */
  def roundsPerLeaseLook(config: WorkerConfig): Long =
    val rounds = config.lease.toNanos / config.heartbeat.toNanos
    rounds.max(1L)

  /** Whether round `n` (from 0) of a rescuer also looks at the leases: the first, then every `every`-th. */
  def looksAtLeases(n: Long, every: Long): Boolean = n % every == 0

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
    val every = roundsPerLeaseLook(worker.config)
    // (available again, dead, cancelled), summed over the round's statements
    def rescueAll(leases: Boolean, sum: (Int, Int, Int)): F[(Int, Int, Int)] =
      run(sql.rescue(deadAfter.toMillis, batch, leases)).flatMap { (rescued, dead, cancelled) =>
        val n = rescued + dead + cancelled
        val total = (sum._1 + rescued, sum._2 + dead, sum._3 + cancelled)
        F.delay(counters.rescued.addAndGet(n.toLong)) *>
          (if n >= batch then rescueAll(leases, total) else F.pure(total))
      }
    def told(rescued: Int, dead: Int, cancelled: Int): F[Unit] =
      logger.info(log.context)(
        s"${log.prefix}: rescued ${rescued + dead + cancelled} task(s) of dead workers or expired leases " +
          s"($rescued available again, $dead dead, $cancelled cancelled)"
      ).whenA(rescued + dead + cancelled > 0)
    // `rounds` counts the rounds begun, failed ones included: the leases' look comes every `every` rounds of
    // the period, whatever the rounds between found
    def round(rounds: AtomicLong): F[Unit] =
      F.delay(looksAtLeases(rounds.getAndIncrement(), every)).flatMap(leases =>
        rescueAll(leases, (0, 0, 0)).flatMap(told.tupled)
      ) *> run(sql.forgetWorkers(deadAfter.toMillis * 20)).void
    for
      faults <- Resource.eval(log.faults(service.name, "the rescue", counters))
      rounds <- Resource.eval(F.delay(new AtomicLong))
      _ <- Service.periodic(service, faults)(round(rounds))
    yield ()
