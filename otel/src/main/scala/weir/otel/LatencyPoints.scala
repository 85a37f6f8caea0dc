package weir.otel

import cats.effect.kernel.Async
import cats.effect.std.Dispatcher
import cats.syntax.all.*
import io.opentelemetry.api.common.Attributes as JavaAttributes
import io.opentelemetry.sdk.common.InstrumentationScopeInfo
import io.opentelemetry.sdk.metrics.data.*
import io.opentelemetry.sdk.resources.Resource as SdkResource

import scala.concurrent.duration.FiniteDuration
import scala.jdk.CollectionConverters.*

/**
 * One collection of the latency histogram: every series' ended runs' buckets plus those of its runs going
 * on, as one cumulative explicit-bucket histogram point per series, in seconds.
 */
private[otel] final class LatencyPoints[F[_]](
    registry: Registry[F],
    bounds: Vector[FiniteDuration],
    dispatcher: Dispatcher[F]
)(using F: Async[F]):
  private val boundaries = bounds.map(b => java.lang.Double.valueOf(seconds(b.toNanos))).asJava
  private val scope = InstrumentationScopeInfo.create("weir")

  def produce(resource: SdkResource): java.util.Collection[MetricData] =
    val points = dispatcher.unsafeRunSync(read)
    if points.isEmpty then java.util.Collections.emptyList()
    else
      java.util.List.of(LatencyMetric(
        resource,
        scope,
        HistogramData.create(AggregationTemporality.CUMULATIVE, points.asJava)
      ))

  private def read: F[Vector[HistogramPointData]] =
    F.realTime.flatMap { now =>
      registry.series.toVector.traverse { (key, series) =>
        series.live.values.toVector.traverse(_.latencies).map { live =>
          val b = live.foldLeft(series.endedLatencies)(_ + Buckets.of(_, bounds))
          HistogramPointData.create(
            series.startEpochNanos,
            now.toNanos,
            attributes(key),
            seconds(b.sumNanos),
            false, // the engine keeps no minimum
            0.0,
            b.count > 0,
            seconds(b.maxNanos),
            boundaries,
            b.counts.map(java.lang.Long.valueOf).asJava
          )
        }
      }
    }

  private def seconds(nanos: Long): Double = nanos / 1e9

  private def attributes(key: SeriesKey): JavaAttributes =
    val b = JavaAttributes.builder().put(MetricNames.PipelineName, key.pipeline)
    key.queue.foreach(q => b.put(MetricNames.QueueName, q))
    b.build()

/** `weir.task.duration` as the SDK's exporters read a metric. */
private final case class LatencyMetric(
    resource: SdkResource,
    scope: InstrumentationScopeInfo,
    data: HistogramData
) extends MetricData:
  def getResource: SdkResource = resource
  def getInstrumentationScopeInfo: InstrumentationScopeInfo = scope
  def getName: String = MetricNames.Duration
  def getDescription: String = "Task latency, from the start of a task to the end of its handler"
  def getUnit: String = "s"
  def getType: MetricDataType = MetricDataType.HISTOGRAM
  def getData: Data[?] = data
