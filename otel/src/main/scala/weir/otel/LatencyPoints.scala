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
 * One collection of the histograms: every series' ended runs' buckets plus those of its runs going on, as
 * one cumulative explicit-bucket histogram point per series, in seconds — the task latencies
 * (`weir.task.duration`) of every series, and the queue waits (`weir.task.queue_wait`) of the series that
 * have a run that measured them.
 */
private[otel] final class LatencyPoints[F[_]](
    registry: Registry[F],
    bounds: Vector[FiniteDuration],
    dispatcher: Dispatcher[F]
)(using F: Async[F]):
  private val boundaries = bounds.map(b => java.lang.Double.valueOf(seconds(b.toNanos))).asJava
  private val scope = InstrumentationScopeInfo.create("weir")

  def produce(resource: SdkResource): java.util.Collection[MetricData] =
    val (durations, waits) = dispatcher.unsafeRunSync(read)
    List(
      metric(resource, MetricNames.Duration, DurationDescription, durations),
      metric(resource, MetricNames.QueueWait, QueueWaitDescription, waits)
    ).flatten.asJava

  private val DurationDescription = "Task latency, from the start of a task to the end of its handler"
  private val QueueWaitDescription = "Time a task waited, from entering the buffer to its start"

  /** The histogram `name`, or nothing when no series has a point of it. */
  private def metric(
      resource: SdkResource,
      name: String,
      description: String,
      points: Vector[HistogramPointData]
  ): Option[MetricData] =
    Option.when(points.nonEmpty)(HistogramMetric(
      resource,
      scope,
      name,
      description,
      HistogramData.create(AggregationTemporality.CUMULATIVE, points.asJava)
    ))

  private def read: F[(Vector[HistogramPointData], Vector[HistogramPointData])] =
    F.realTime.flatMap { now =>
      registry.series.toVector.traverse { (key, series) =>
        series.live.values.toVector.traverse(r => (r.latencies, r.queueWaits).tupled).map { live =>
          val durations = live.foldLeft(series.endedLatencies)((b, h) => b + Buckets.of(h._1, bounds))
          val waits =
            Buckets.sum(series.endedQueueWaits.toList ++ live.flatMap(_._2.map(Buckets.of(_, bounds))))
          val point = (b: Buckets) => pointOf(b, series.startEpochNanos, now.toNanos, attributes(key))
          (point(durations), waits.map(point))
        }
      }.map(points => (points.map(_._1), points.flatMap(_._2)))
    }

  private def pointOf(b: Buckets, start: Long, now: Long, attributes: JavaAttributes): HistogramPointData =
    HistogramPointData.create(
      start,
      now,
      attributes,
      seconds(b.sumNanos),
      false, // the engine keeps no minimum
      0.0,
      b.count > 0,
      seconds(b.maxNanos),
      boundaries,
      b.counts.map(java.lang.Long.valueOf).asJava
    )

  private def seconds(nanos: Long): Double = nanos / 1e9

  private def attributes(key: SeriesKey): JavaAttributes =
    val b = JavaAttributes.builder().put(MetricNames.PipelineName, key.pipeline)
    key.queue.foreach(q => b.put(MetricNames.QueueName, q))
    b.build()

/** One of weir's histograms as the SDK's exporters read a metric. */
private final case class HistogramMetric(
    resource: SdkResource,
    scope: InstrumentationScopeInfo,
    name: String,
    description: String,
    data: HistogramData
) extends MetricData:
  def getResource: SdkResource = resource
  def getInstrumentationScopeInfo: InstrumentationScopeInfo = scope
  def getName: String = name
  def getDescription: String = description
  def getUnit: String = "s"
  def getType: MetricDataType = MetricDataType.HISTOGRAM
  def getData: Data[?] = data
