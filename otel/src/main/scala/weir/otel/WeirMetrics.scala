package weir.otel

import cats.effect.kernel.{Async, Resource}
import cats.effect.std.Dispatcher
import cats.syntax.all.*
import fs2.Stream
import io.opentelemetry.sdk.OpenTelemetrySdk
import io.opentelemetry.sdk.metrics.SdkMeterProvider
import io.opentelemetry.sdk.metrics.`export`.MetricReader
import org.typelevel.otel4s.metrics.Meter
import org.typelevel.otel4s.oteljava.OtelJava
import org.typelevel.otel4s.oteljava.context.LocalContextProvider
import weir.{DurationHistogram, Pipeline, Running, Summary, TaskOutcome, Validation}

import scala.concurrent.duration.*

/**
 * OpenTelemetry metrics for weir pipelines: counters and gauges through otel4s' `Meter`, and the task
 * latency and queue-wait histograms through a [[LatencyProducer]] of the OpenTelemetry Java SDK.
 *
 * {{{
 * WeirMetrics.register(meter).use { metrics =>
 *   metrics.run(Pipeline(tasks).process(send), pipeline = "emails")
 * }
 * }}}
 *
 * ==What it costs==
 * Nothing per task: the engine counts every transition and records every latency anyway (the counters of
 * [[weir.Snapshot]], the histogram of [[Running.latencies]]); this module reads them when the metrics are
 * collected. Counters and gauges are observable instruments, read by one callback per collection; the
 * latency histogram is produced from the engine's histogram at each collection, because OpenTelemetry
 * has no observable histogram and recording each task a second time would cost more than the task itself
 * for small tasks (ADR 0021). The queue-wait histogram is there for the pipelines built with
 * [[Pipeline.withQueueWaits]], whose engine records the waits at a small cost of its own (a clock reading
 * per chunk offered); it uses the latency histogram's bounds.
 *
 * ==Series==
 * Every metric carries `weir.pipeline.name` and, for a durable queue, `weir.queue.name`. Runs under the
 * same names add up: a series counts every run that used its names since the first, and its gauges sum
 * the runs going on. [[MetricNames]] lists the metrics.
 *
 * Cancellation: releasing an instrumented run releases the run first (it stops as [[Pipeline.start]]
 * says), then keeps its final counts in its series.
 */
final class WeirMetrics[F[_]] private (registry: Registry[F], bounds: Vector[FiniteDuration])(using
    F: Async[F]
):

  /** `run` (from [[Pipeline.start]]), reported under `pipeline` and `queue` while it lives and after. */
  def instrument[A](
      run: Resource[F, Running[F, A]],
      pipeline: String,
      queue: Option[String] = None
  ): Resource[F, Running[F, A]] =
    instrumentBy(run, pipeline, queue)(identity)

  /** [[Pipeline.run]], reported under `pipeline` and `queue`. */
  def run[A](pipe: Pipeline[F, A, ?], pipeline: String, queue: Option[String] = None): F[Summary[A]] =
    instrument(pipe.start, pipeline, queue).use(_.join)

  /** [[Pipeline.outcomes]], reported under `pipeline` and `queue`. */
  def outcomes[A, B](
      pipe: Pipeline[F, A, B],
      pipeline: String,
      queue: Option[String] = None
  ): Stream[F, TaskOutcome[A, B]] =
    Stream.resource(instrumentBy(pipe.startWithOutcomes, pipeline, queue)(_._1)).flatMap(_._2)

  /**
   * A resource that holds a run (`running` finds it), reported under `pipeline` and `queue`: the run is
   * attached to its series once the resource is acquired, and retired once it is released — after the
   * run's own release, so that what it counted last is kept. For a durable worker:
   * `metrics.instrumentBy(DurableWorker.start(db, config)(build), "emails", Some("emails"))(_.running)`.
   */
  def instrumentBy[R](resource: Resource[F, R], pipeline: String, queue: Option[String] = None)(
      running: R => Running[F, ?]
  ): Resource[F, R] =
    val key = SeriesKey(pipeline, queue)
    for
      slot <-
        Resource.make(F.ref(Option.empty[(Long, Running[F, ?])]))(_.get.flatMap(_.traverse_(retire(key))))
      r <- resource
      _ <- Resource.eval(F.uncancelable { _ =>
        F.realTime.flatMap { now =>
          val run = running(r)
          F.delay(registry.attach(key, run, now.toNanos, Buckets.zero(bounds))).flatMap(id =>
            slot.set(Some(id -> run))
          )
        }
      })
    yield r

  private def retire(key: SeriesKey)(id: Long, run: Running[F, ?]): F[Unit] =
    (run.snapshot, run.latencies, run.queueWaits).flatMapN { (last, latencies, waits) =>
      F.delay(registry.retire(
        key,
        id,
        Counts.of(last),
        Buckets.of(latencies, bounds),
        waits.map(Buckets.of(_, bounds))
      ))
    }

object WeirMetrics:

  /**
   * The explicit bucket bounds of the latency histogram by default: those OpenTelemetry's semantic
   * conventions advise for request durations, from 5 ms to 10 s, below them the fast tasks a task engine
   * sees: 10 µs to 2.5 ms.
   */
  val DefaultLatencyBounds: Vector[FiniteDuration] =
    Vector(
      10.micros,
      100.micros,
      500.micros,
      1.milli,
      2500.micros,
      5.millis,
      10.millis,
      25.millis,
      50.millis,
      75.millis,
      100.millis,
      250.millis,
      500.millis,
      750.millis,
      1.second,
      2500.millis,
      5.seconds,
      7500.millis,
      10.seconds
    )

  /**
   * Registers weir's counters and gauges with `meter`, and binds `latencies` (registered with the
   * application's `SdkMeterProvider`, see [[LatencyProducer]]) to produce the latency histogram; without
   * one, no histogram is exported. Releasing it unregisters both. Bad `latencyBounds` (empty, not strictly
   * ascending, or negative) fail the resource, before anything is registered, with an [[weir.InvalidSettings]]
   * naming them.
   */
  def register[F[_]](
      meter: Meter[F],
      latencies: Option[LatencyProducer] = None,
      latencyBounds: Vector[FiniteDuration] = DefaultLatencyBounds
  )(using F: Async[F]): Resource[F, WeirMetrics[F]] =
    for
      _ <- Validation.resource("WeirMetrics", boundsErrors(latencyBounds))
      registry <- Resource.eval(F.delay(new Registry[F]))
      _ <- Observers.register(meter, registry)
      _ <- latencies.traverse_(producer =>
        Dispatcher.parallel[F](await = false).flatMap(d =>
          producer.bind(new LatencyPoints(registry, latencyBounds, d))
        )
      )
    yield new WeirMetrics(registry, latencyBounds)

  /**
   * weir's metrics, histogram included, on an OpenTelemetry Java SDK of their own that exports through
   * `reader` (a Prometheus endpoint, a periodic OTLP exporter, an in-memory reader in tests). For an
   * application that has no SDK yet or wants weir's metrics apart; one that has one registers a
   * [[LatencyProducer]] with it and calls [[register]]. Releasing it closes the SDK and the reader. Bad
   * `latencyBounds` fail it as they fail [[register]], before the SDK is built.
   */
  def onSdk[F[_]: Async: LocalContextProvider](
      reader: MetricReader,
      latencyBounds: Vector[FiniteDuration] = DefaultLatencyBounds
  ): Resource[F, WeirMetrics[F]] =
    val F = Async[F]
    val latencies = LatencyProducer()
    for
      _ <- Validation.resource("WeirMetrics", boundsErrors(latencyBounds))
      sdk <- Resource.make(
        F.delay(
          OpenTelemetrySdk
            .builder()
            .setMeterProvider(
              SdkMeterProvider.builder().registerMetricReader(
                reader
              ).registerMetricProducer(latencies).build()
            )
            .build()
        )
      )(sdk => F.blocking(sdk.close()))
      otel <- Resource.eval(OtelJava.fromJOpenTelemetry[F](sdk))
      meter <- Resource.eval(otel.meterProvider.get("weir"))
      metrics <- register(meter, Some(latencies), latencyBounds)
    yield metrics

  /** What is wrong with latency bounds, each named; empty when they are good. */
  def boundsErrors(bounds: Vector[FiniteDuration]): List[String] =
    Validation.check(bounds.nonEmpty, "latency bounds must not be empty, was: none") ++
      Validation.nested("latencyBounds", DurationHistogram.boundsErrors(bounds))
