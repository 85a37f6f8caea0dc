package weir.otel

import cats.effect.kernel.{Resource, Sync}
import cats.syntax.all.*
import io.opentelemetry.sdk.metrics.data.MetricData
import io.opentelemetry.sdk.metrics.`export`.MetricProducer
import io.opentelemetry.sdk.resources.Resource as SdkResource

import java.util.concurrent.atomic.AtomicReference

/**
 * Produces weir's histograms for the OpenTelemetry Java SDK: the task latencies (`weir.task.duration`) from
 * the histogram the engine keeps anyway ([[weir.Running.latencies]]), so no task is recorded twice, and the
 * queue waits (`weir.task.queue_wait`) of pipelines that measure them ([[weir.Running.queueWaits]]).
 *
 * Register it with the SDK's meter provider when the SDK is built, then hand it to
 * [[WeirMetrics.register]], which binds it to its pipelines:
 *
 * {{{
 * val latencies = LatencyProducer()
 * OtelJava
 *   .autoConfigured[IO](_.addMeterProviderCustomizer((b, _) => b.registerMetricProducer(latencies)))
 *   .evalMap(_.meterProvider.get("my-service"))
 *   .flatMap(meter => WeirMetrics.register(meter, Some(latencies)))
 * }}}
 *
 * Unbound, it produces nothing. It serves one [[WeirMetrics]] at a time: binding a second while one is
 * bound fails. Every reader of the SDK (periodic, Prometheus, in-memory) collects from it; a reader's
 * collection runs the engine's read on the bound [[WeirMetrics]]' dispatcher and waits for it, so collect
 * from a thread that may block (the SDK's own readers do).
 */
final class LatencyProducer extends MetricProducer:
  private val source = new AtomicReference[LatencyPoints[?] | Null](null)

  def produce(resource: SdkResource): java.util.Collection[MetricData] =
    source.get match
      case null => java.util.Collections.emptyList()
      case points: LatencyPoints[?] =>
        // a collection racing the release of its WeirMetrics finds the dispatcher closed: nothing to report
        try points.produce(resource)
        catch
          case _: IllegalStateException | _: java.util.concurrent.CancellationException =>
            java.util.Collections.emptyList()

  /** Binds `points` while the resource lives. */
  private[otel] def bind[F[_]](points: LatencyPoints[F])(using F: Sync[F]): Resource[F, Unit] =
    Resource.make(
      F.delay {
        if !source.compareAndSet(null, points) then
          throw new IllegalStateException("this LatencyProducer is already bound to another WeirMetrics")
      }
    )(_ => F.delay(source.compareAndSet(points, null)).void)
