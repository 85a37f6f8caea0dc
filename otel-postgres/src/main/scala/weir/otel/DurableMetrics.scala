package weir.otel

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import org.typelevel.otel4s.metrics.{Meter, ObservableMeasurement}
import org.typelevel.otel4s.{Attribute, Attributes}
import weir.postgres.{Database, DurableWorker, FinishedState, QueueDepths, WorkerStats}

import java.util.concurrent.atomic.{AtomicLong, AtomicReference}

/**
 * OpenTelemetry metrics of weir-postgres: each durable worker's [[weir.postgres.WorkerStats]] as counters, and, given a
 * [[weir.postgres.QueueDepths]], every queue's depth by state as gauges ([[DurableMetricNames]] lists them). Registered
 * like [[WeirMetrics]], on the same `Meter`; a worker's pipeline is instrumented by [[WeirMetrics]] as
 * before, and its worker by [[instrument]]:
 *
 * {{{
 * (WeirMetrics.register(meter), QueueDepths.start(db).flatMap(d => DurableMetrics.register(meter, Some(d))))
 *   .tupled.use { (engine, durable) =>
 *     val worker = DurableWorker.start(db, WorkerConfig(queue = "emails"))(build)
 *     engine.instrumentBy(durable.instrument(worker, "emails"), "emails", Some("emails"))(_.running).useForever
 *   }
 * }}}
 *
 * ==What it costs==
 * Nothing per task, and no query per collection: the counters read the workers' own counts
 * ([[weir.postgres.DurableWorker#stats]]) and the gauges read the last shared count ([[weir.postgres.QueueDepths#read]]), at collection.
 *
 * ==Series==
 * A queue's counters sum its workers in this process, those going on and those ended (their final counts
 * kept), so they never go back; a queue's series stays once its workers have ended.
 */
final class DurableMetrics[F[_]] private (workers: DurableMetrics.Workers[F])(using F: Async[F]):

  /**
   * `worker`, its [[weir.postgres.WorkerStats]] reported under `queue` (its [[weir.postgres.WorkerConfig.queue]]) while it
   * lives and after: attached once acquired, and retired once released, after the worker's own release, so
   * that its final counts are kept.
   *
   * Concurrent calls are allowed (each worker is its own entry; those under one name add up). Cancellation:
   * the worker is released as its own resource says; its counts are kept all the same.
   */
  def instrument[A](
      worker: Resource[F, DurableWorker[F, A]],
      queue: String
  ): Resource[F, DurableWorker[F, A]] =
    for
      slot <- Resource.make(F.ref(Option.empty[(Long, DurableWorker[F, ?])]))(
        _.get.flatMap(_.traverse_((id, w) =>
          w.stats.flatMap(last => F.delay(workers.retire(queue, id, last)))
        ))
      )
      w <- worker
      _ <- Resource.eval(F.uncancelable(_ =>
        F.delay(workers.attach(queue, w)).flatMap(id => slot.set(Some(id -> w)))
      ))
    yield w

object DurableMetrics:

  /**
   * Registers the durable workers' counters with `meter`, and, with `depths`, the queue depth gauges read
   * from it (one [[weir.postgres.QueueDepths]] per process: every collection reads its last count). Releasing it
   * unregisters them; `depths` is the caller's to release.
   */
  def register[F[_]](meter: Meter[F], depths: Option[QueueDepths[F]] = None)(using
      F: Async[F]
  ): Resource[F, DurableMetrics[F]] = register(meter, depths, None)

  /**
   * [[register]], and, with `database`, its [[weir.postgres.Database.stats]] as counters: the runs of
   * operators' actions it rode out ([[DurableMetricNames.ActionDeadlocks]]).
   */
  def register[F[_]](meter: Meter[F], depths: Option[QueueDepths[F]], database: Option[Database[F]])(using
      F: Async[F]
  ): Resource[F, DurableMetrics[F]] =
    val workers = new Workers[F]
    def counter(name: String, unit: String, what: String) =
      meter.observableCounter[Long](name).withUnit(unit).withDescription(what).createObserver
    val fields: Vector[(String, String, String, WorkerStats => Long)] = Vector(
      (DurableMetricNames.Claimed, "{task}", "Tasks claimed", _.claimed),
      (DurableMetricNames.HeldBack, "{claim}", "Claims the queue's controls held back", _.heldBack),
      (DurableMetricNames.Completed, "{task}", "Claims finished as completed", _.completed),
      (DurableMetricNames.Retried, "{task}", "Claims failed and made available for a retry", _.retried),
      (DurableMetricNames.Dead, "{task}", "Claims failed for good", _.dead),
      (DurableMetricNames.Cancelled, "{task}", "Claims finished as cancelled", _.cancelled),
      (DurableMetricNames.HandedBack, "{task}", "Claims handed back unstarted", _.handedBack),
      (DurableMetricNames.Snoozed, "{task}", "Claims snoozed by their handler", _.snoozed),
      (DurableMetricNames.Refused, "{task}", "Claims refused at their start", _.refused),
      (DurableMetricNames.Rescued, "{task}", "Dead workers' tasks rescued", _.rescued),
      (DurableMetricNames.Taken, "{task}", "Claims rescued by another worker while this one lived", _.taken),
      (DurableMetricNames.DatabaseErrors, "{error}", "Database errors ridden out", _.databaseErrors)
    )
    for
      counters <-
        Resource.eval(fields.traverse((name, unit, what, read) => counter(name, unit, what).map(_ -> read)))
      workerCounts = F.delay(workers.series).flatMap(_.toVector.traverse_ { (queue, series) =>
        series.live.values.toVector.traverse(_.stats).flatMap { live =>
          val total = live.foldLeft(series.ended)(plus)
          val on = queueAttributes(queue)
          counters.traverse_((m, read) => m.record(read(total), on))
        }
      })
      _ <- depths match
        case None => meter.batchCallback(workerCounts, counters.head._1, counters.tail.map(_._1)*)
        case Some(d) =>
          Resource
            .eval(
              (
                meter
                  .observableGauge[Long](DurableMetricNames.Depth)
                  .withUnit("{task}")
                  .withDescription("Tasks in the queue by state, at the last shared count")
                  .createObserver,
                meter
                  .observableGauge[Double](DurableMetricNames.OldestAge)
                  .withUnit("s")
                  .withDescription(
                    "How long the oldest available task has been due, at the last shared count"
                  )
                  .createObserver,
                counter(DurableMetricNames.DepthFailures, "{count}", "Shared queue counts that failed")
              ).tupled
            )
            .flatMap { (depth, age, failures) =>
              meter.batchCallback(
                workerCounts *> reportDepths(d, depth, age, failures),
                depth,
                (Vector[ObservableMeasurement[F, ?]](age, failures) ++ counters.map(_._1))*
              )
            }
      _ <- database.traverse_(db =>
        meter
          .observableCounter[Long](DurableMetricNames.ActionDeadlocks)
          .withUnit("{run}")
          .withDescription("Runs of operators' actions the server aborted as deadlocks, each run again")
          .createWithCallback(m => db.stats.flatMap(s => m.record(s.deadlocksRetried)))
      )
    yield new DurableMetrics(workers)

  private def reportDepths[F[_]](
      depths: QueueDepths[F],
      depth: ObservableMeasurement[F, Long],
      age: ObservableMeasurement[F, Double],
      failures: ObservableMeasurement[F, Long]
  )(using F: Async[F]): F[Unit] =
    depths.read.flatMap { state =>
      failures.record(state.failures) *>
        state.last.toVector.flatMap(_.queues).traverse_ { q =>
          val on = queueAttributes(q.queue)
          val states = Vector(
            "available" -> q.available,
            "scheduled" -> q.scheduled,
            "waiting" -> q.waiting,
            "running" -> q.running
          ) ++ FinishedState.values.toVector.flatMap(s => q.finished.get(s).map(s.name -> _))
          states.traverse_((name, n) =>
            depth.record(n, on.added(Attribute(DurableMetricNames.State, name)))
          ) *>
            age.record(q.oldestAvailable.fold(0.0)(_.toNanos / 1e9), on)
        }
    }

  private def queueAttributes(queue: String): Attributes = Attributes(Attribute(MetricNames.QueueName, queue))

  private def plus(a: WorkerStats, b: WorkerStats): WorkerStats =
    WorkerStats(
      claimed = a.claimed + b.claimed,
      heldBack = a.heldBack + b.heldBack,
      completed = a.completed + b.completed,
      retried = a.retried + b.retried,
      dead = a.dead + b.dead,
      cancelled = a.cancelled + b.cancelled,
      handedBack = a.handedBack + b.handedBack,
      snoozed = a.snoozed + b.snoozed,
      rescued = a.rescued + b.rescued,
      taken = a.taken + b.taken,
      refused = a.refused + b.refused,
      databaseErrors = a.databaseErrors + b.databaseErrors,
      lastError = None
    )

  /** One queue's series: its workers going on, by id, and what the ended ones counted. */
  private final case class Series[F[_]](live: Map[Long, DurableWorker[F, ?]], ended: WorkerStats)

  /**
   * The workers reported, by queue. A worker is retired, its last counts added to the ended totals, in the
   * same atomic step that removes it, so that a collection sees it either live or ended, never both nor
   * neither; a series stays when its workers have ended (a cumulative counter must not go back).
   */
  private final class Workers[F[_]]:
    private val state = new AtomicReference(Map.empty[String, Series[F]])
    private val ids = new AtomicLong

    def series: Map[String, Series[F]] = state.get

    def attach(queue: String, worker: DurableWorker[F, ?]): Long =
      val id = ids.incrementAndGet()
      val _ = state.updateAndGet { m =>
        val s = m.getOrElse(queue, Series[F](Map.empty, WorkerStats()))
        m.updated(queue, s.copy(live = s.live.updated(id, worker)))
      }
      id

    def retire(queue: String, id: Long, last: WorkerStats): Unit =
      val _ = state.updateAndGet { m =>
        m.get(queue) match
          case Some(s) if s.live.contains(id) =>
            m.updated(queue, Series(s.live - id, plus(s.ended, last)))
          case _ => m
      }
