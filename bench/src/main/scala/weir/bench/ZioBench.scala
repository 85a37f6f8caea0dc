package weir.bench

import org.openjdk.jmh.annotations.*
import weir.bench.Workload.*
import zio.{Duration, Runtime, UIO, Unsafe, ZIO}
import zio.stream.ZStream

import java.util.concurrent.TimeUnit

/**
 * ZIO 2.1 Streams: `mapZIOParUnordered` at the same concurrency as weir, on ZIO's default runtime.
 * Baselines: `mapZIO` (the same stream, one task at a time); ten 1 ms `ZIO.sleep`s in a row.
 *
 * Run (from the repository root, after building bench):
 * {{{
 * ./weir bench 'weir.bench.ZioBench'
 * }}}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array(JvmFlags))
class ZioBench:

  private val noop: Int => UIO[Unit] = _ => ZIO.unit
  private val sleep: Int => UIO[Unit] = _ => ZIO.sleep(Duration.fromMillis(SleepMillis.toLong))

  private def unsafeRun[A](zio: ZIO[Any, Throwable, A]): A =
    Unsafe.unsafe(implicit unsafe => Runtime.default.unsafe.run(zio).getOrThrowFiberFailure())

  private def source(n: Int): ZStream[Any, Nothing, Int] = ZStream.range(0, n)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopMapZIOParUnordered(): Unit = unsafeRun(source(Tasks).mapZIOParUnordered(Concurrency)(noop).runDrain)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopMapZIO(): Unit = unsafeRun(source(Tasks).mapZIO(noop).runDrain)

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepMapZIOParUnordered(): Unit =
    unsafeRun(source(SleepTasks).mapZIOParUnordered(SleepConcurrency)(sleep).runDrain)

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepSequential(): Unit = unsafeRun(ZIO.foreachDiscard(0 until SequentialSleeps)(sleep))
