package weir.bench

import cats.effect.IO
import cats.effect.std.Supervisor
import fs2.Stream
import org.openjdk.jmh.annotations.*
import weir.{Limit, Pipeline}

import java.util.concurrent.{CountDownLatch, TimeUnit}
import scala.concurrent.{blocking, ExecutionContext, Future}

/**
 * What a blocking mechanism costs per call when the body does nothing (seed 003's micro-benchmark,
 * `./weir lab blocking`'s companion): [[BlockingBench.Calls]] calls are started at once and the benchmark
 * waits for all of them; the score is ns per call.
 *
 *   - `futureBlocking` vs its baseline `futureNoMarker`: Scala `Future` on the global pool, the body in
 *     `scala.concurrent.blocking` or not;
 *   - `ioBlocking`, `ioInterruptible` vs their baseline `ioDelay`: a fiber per call (all started by one
 *     `Supervisor`, which awaits them), the body in `IO.blocking`, `IO.interruptible` or plain `IO.delay`
 *     (`parTraverse_` was not used: it nests `both`, and on a loaded machine it measured the nesting);
 *   - `virtualThread`: a JDK virtual thread per call, started and joined;
 *   - `weirProcessBlocking` vs its baseline `weirProcess`: a weir pipeline of [[BlockingBench.Calls]] tasks
 *     with `processBlocking` or `process(IO.delay)` (limit 64, weir's default).
 *
 * Run (from the repository root, after building bench):
 * {{{
 * ./weir bench 'weir.bench.BlockingBench'
 * }}}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array(Workload.JvmFlags))
class BlockingBench extends OnWeirRuntime:
  import BlockingBench.Calls

  private val global = ExecutionContext.global
  private val empty: () => Unit = () => ()

  private def futures(marker: Boolean): Unit =
    val latch = new CountDownLatch(Calls)
    var i = 0
    while i < Calls do
      val _ = Future {
        if marker then blocking(empty()) else empty()
        latch.countDown()
      }(using global)
      i += 1
    latch.await()

  /** [[Calls]] fibers running `call`, all started before any is awaited (owned by a supervisor that awaits them). */
  private def fibers(call: IO[Unit]): Unit =
    unsafeRun(Supervisor[IO](await = true).use(s => s.supervise(call).replicateA_(Calls)))

  @Benchmark
  @OperationsPerInvocation(Calls)
  def futureNoMarker(): Unit = futures(marker = false)

  @Benchmark
  @OperationsPerInvocation(Calls)
  def futureBlocking(): Unit = futures(marker = true)

  @Benchmark
  @OperationsPerInvocation(Calls)
  def ioDelay(): Unit = fibers(IO.delay(empty()))

  @Benchmark
  @OperationsPerInvocation(Calls)
  def ioBlocking(): Unit = fibers(IO.blocking(empty()))

  @Benchmark
  @OperationsPerInvocation(Calls)
  def ioInterruptible(): Unit = fibers(IO.interruptible(empty()))

  @Benchmark
  @OperationsPerInvocation(Calls)
  def virtualThread(): Unit =
    val threads = new Array[Thread](Calls)
    var i = 0
    while i < Calls do
      threads(i) = Thread.ofVirtual().start(() => empty())
      i += 1
    i = 0
    while i < Calls do
      threads(i).join()
      i += 1

  @Benchmark
  @OperationsPerInvocation(Calls)
  def weirProcess(): Long =
    unsafeRun(Pipeline(Stream.range(
      0,
      Calls
    ).covary[IO]).process(_ => IO.delay(empty())).run.map(_.succeeded))

  @Benchmark
  @OperationsPerInvocation(Calls)
  def weirProcessBlocking(): Long =
    unsafeRun(
      Pipeline(Stream.range(
        0,
        Calls
      ).covary[IO]).processBlocking(_ => empty()).withLimit(Limit.fixed(64)).run.map(
        _.succeeded
      )
    )

object BlockingBench:
  /**
   * Calls started at once per invocation. The write-up started 100; with 100 or 1000, waking the parked
   * pool threads at each invocation dominated the score on a loaded 2-core machine (tens of µs per call
   * for a fiber); 10,000 amortises most of it while a cold smoke-run invocation stays within seconds.
   */
  final val Calls = 10000
