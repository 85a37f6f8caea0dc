package weir.lab.adaptive

import cats.effect.IO
import fs2.Stream
import org.HdrHistogram.ConcurrentHistogram
import weir.{Limit, Pipeline}

import java.util.concurrent.atomic.LongAdder
import scala.concurrent.duration.*

/**
 * One configuration against the upstream for a fixed time: an endless source (the clients always have
 * more work), the limit under test, no retries. Every attempt is one request; failures are skipped.
 */
object Trial:

  /** The limit, the in-flight count and the capacity every `every`. */
  final case class Point(t: FiniteDuration, limit: Int, inFlight: Long, capacity: Int)

  final case class Result(
      name: String,
      limit: String,
      duration: FiniteDuration,
      succeeded: Long,
      errors: Long,
      p50: FiniteDuration,
      p99: FiniteDuration,
      max: FiniteDuration,
      series: Vector[Point]
  ):
    def throughput: Double = succeeded / (duration.toNanos / 1e9)
    def errorRate: Double = if succeeded + errors == 0 then 0.0 else errors.toDouble / (succeeded + errors)

  def run(
      name: String,
      limit: Limit,
      model: Upstream.Model,
      duration: FiniteDuration,
      every: FiniteDuration
  ): IO[Result] =
    for
      upstream <- Upstream(model)
      latencies <- IO(new ConcurrentHistogram(3))
      errors <- IO(new LongAdder)
      handler = (_: Long) =>
        IO.monotonic.flatMap { t0 =>
          // the error goes on to the pipeline: an adaptive limit must see it
          upstream.call.flatMap(_ =>
            IO.monotonic.flatMap(t1 => IO(latencies.recordValue((t1 - t0).toMicros)))
          )
            .onError(_ => IO(errors.increment()))
        }
      series <- Pipeline(Stream.iterate(0L)(_ + 1).covary[IO])
        .process(handler)
        .withLimit(limit)
        .withBuffer(256)
        .start
        .use { running =>
          running.metrics(every)
            .map(s => Point(s.elapsed, s.limit, s.inFlight, model.capacityAt(s.elapsed)))
            .compile
            .toVector
            .background
            .use(points => IO.sleep(duration) *> running.drain(Duration.Zero) *> points.flatMap(_.embedNever))
        }
      percentile = (p: Double) =>
        if latencies.getTotalCount == 0 then Duration.Zero
        else latencies.lowestEquivalentValue(latencies.getValueAtPercentile(p)).micros
    yield Result(
      name,
      limit.toString,
      duration,
      latencies.getTotalCount,
      errors.sum,
      percentile(50),
      percentile(99),
      if latencies.getTotalCount == 0 then Duration.Zero else latencies.getMaxValue.micros,
      series.filter(_.t < duration) // the last snapshot, after the drain, shows nothing in flight
    )
