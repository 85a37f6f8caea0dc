package weir.bench

import cats.effect.IO
import fs2.Stream
import io.opentelemetry.sdk.testing.exporter.InMemoryMetricReader
import org.openjdk.jmh.annotations.*
import weir.{Limit, Pipeline}
import weir.bench.Workload.*
import weir.otel.WeirMetrics

import java.util.concurrent.TimeUnit

/**
 * What weir's OpenTelemetry metrics (`weir-otel4s`) add per task: the no-op workloads of [[WeirBench]]
 * (unordered, one chunk or one task per chunk) run plainly (`metrics = off`) and through
 * `WeirMetrics.run` on the OpenTelemetry Java SDK with the latency histogram (`on`), while a thread
 * collects every metric every 100 ms (ten to a hundred times more often than an exporter would); and
 * with the engine measuring queue waits (`queueWaits = on`, `Pipeline.withQueueWaits`) or not.
 *
 * {{{
 * ./weir bench 'weir.bench.OtelBench' -prof gc
 * }}}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array(JvmFlags))
class OtelBench extends OnWeirRuntime:

  @Param(Array("off", "on"))
  var metrics: String = scala.compiletime.uninitialized

  @Param(Array("off"))
  var queueWaits: String = scala.compiletime.uninitialized

  private var instrumented: Option[WeirMetrics[IO]] = None
  private var release: IO[Unit] = IO.unit
  @volatile private var collecting = false
  private var collector: Thread = scala.compiletime.uninitialized

  override protected def started(): Unit =
    if metrics == "on" then
      val reader = InMemoryMetricReader.create()
      val (m, free) = unsafeRun(WeirMetrics.onSdk[IO](reader).allocated)
      instrumented = Some(m)
      release = free
      collecting = true
      collector = new Thread(() =>
        while collecting do
          reader.collectAllMetrics()
          Thread.sleep(100)
      )
      collector.setDaemon(true)
      collector.start()

  override protected def stopping(): Unit =
    collecting = false
    if collector != null then collector.join()
    unsafeRun(release)

  private def run(tasks: Stream[IO, Int]): Long =
    val plain = Pipeline(tasks).process(_ => IO.unit).withLimit(Limit.fixed(Concurrency))
    val pipeline = if queueWaits == "on" then plain.withQueueWaits else plain
    unsafeRun(instrumented.fold(pipeline.run)(_.run(pipeline, "bench")).map(_.succeeded))

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopUnordered(): Long = run(Stream.range(0, Tasks).covary[IO])

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopUnorderedOneChunk(): Long = run(Stream.emits(0 until Tasks).covary[IO])
