package weir.otel

import cats.effect.kernel.{Async, Resource}
import cats.syntax.all.*
import org.typelevel.otel4s.metrics.{Meter, ObservableMeasurement}
import org.typelevel.otel4s.{Attribute, Attributes}
import weir.Disposition

/**
 * weir's counters and gauges as otel4s observable instruments, all read by one batch callback per
 * collection: one [[weir.Running.snapshot]] per run going on, and the ended runs' totals.
 */
private[otel] object Observers:

  def register[F[_]](meter: Meter[F], registry: Registry[F])(using F: Async[F]): Resource[F, Unit] =
    def counter(name: String, unit: String, what: String) =
      meter.observableCounter[Long](name).withUnit(unit).withDescription(what).createObserver
    def upDown(name: String, unit: String, what: String) =
      meter.observableUpDownCounter[Long](name).withUnit(unit).withDescription(what).createObserver
    Resource
      .eval(
        (
          counter(MetricNames.Received, "{task}", "Tasks taken from the sources"),
          counter(MetricNames.Started, "{task}", "Tasks whose handler began"),
          counter(MetricNames.Finished, "{task}", "Tasks that reached an outcome"),
          counter(MetricNames.Retries, "{attempt}", "Attempts beyond each task's first"),
          counter(MetricNames.Timeouts, "{attempt}", "Attempts that hit the task timeout"),
          counter(MetricNames.RateLimited, "{attempt}", "Attempts that waited for a rate-limit permit"),
          upDown(MetricNames.InFlight, "{task}", "Tasks running now"),
          upDown(MetricNames.Buffered, "{task}", "Tasks waiting in the buffer"),
          meter
            .observableGauge[Long](MetricNames.Limit)
            .withUnit("{task}")
            .withDescription("The concurrency limit")
            .createObserver,
          upDown(MetricNames.Workers, "{worker}", "Worker fibers alive"),
          counter(MetricNames.WakeUps, "{wake-up}", "Times a worker found no task, parked, and was woken")
        ).tupled
      )
      .flatMap {
        (
            received,
            started,
            finished,
            retries,
            timeouts,
            rateLimited,
            inFlight,
            buffered,
            limit,
            workers,
            wakeUps
        ) =>
          val outcomes: Vector[(Attribute[String], Counts => Long)] =
            Vector(
              Attribute(MetricNames.Outcome, MetricNames.Succeeded) -> ((c: Counts) => c.succeeded),
              Attribute(MetricNames.Outcome, MetricNames.NotStarted) -> ((c: Counts) => c.notStarted)
            ) ++ Disposition.values.map(d =>
              Attribute(MetricNames.Outcome, MetricNames.outcome(d)) ->
                ((c: Counts) => c.dispositions.getOrElse(d, 0L))
            )
          def report(key: SeriesKey, c: Counts, g: Gauges): F[Unit] =
            val on = attributes(key)
            def put(m: ObservableMeasurement[F, Long], v: Long) = m.record(v, on)
            put(received, c.received) *> put(started, c.started) *> put(retries, c.retries) *>
              put(timeouts, c.timeouts) *> put(rateLimited, c.rateLimited) *>
              outcomes.traverse_((outcome, count) => finished.record(count(c), on.added(outcome))) *>
              put(inFlight, g.inFlight) *> put(buffered, g.buffered) *> put(limit, g.limit) *>
              put(workers, g.workers) *> put(wakeUps, c.wakeUps)
          val collect: F[Unit] =
            F.delay(registry.series).flatMap(_.toVector.traverse_ { (key, series) =>
              series.live.values.toVector.traverse(_.snapshot).flatMap { snapshots =>
                report(
                  key,
                  snapshots.foldLeft(series.endedCounts)(_ + Counts.of(_)),
                  snapshots.foldLeft(Gauges.zero)(_ + Gauges.of(_))
                )
              }
            })
          meter.batchCallback(
            collect,
            received,
            started,
            finished,
            retries,
            timeouts,
            rateLimited,
            inFlight,
            buffered,
            limit,
            workers,
            wakeUps
          )
      }

  /** The attributes that name a series. */
  def attributes(key: SeriesKey): Attributes =
    val pipeline = Attributes(Attribute(MetricNames.PipelineName, key.pipeline))
    key.queue.fold(pipeline)(q => pipeline.added(Attribute(MetricNames.QueueName, q)))
