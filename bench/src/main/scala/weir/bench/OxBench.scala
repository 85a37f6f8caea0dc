package weir.bench

import org.openjdk.jmh.annotations.*
import ox.flow.Flow
import weir.bench.Workload.*

import java.util.concurrent.TimeUnit

/**
 * Ox 1.0 (direct style on virtual threads): `Flow.mapPar` and `Flow.mapParUnordered` at the same
 * concurrency as weir; each element runs in a fork (a virtual thread). The sleep workload blocks its
 * virtual thread in `Thread.sleep(1)`, the direct-style way to wait.
 * Baselines: `Flow.map` (the same flow, one task at a time); ten 1 ms sleeps in a row.
 *
 * Run (from the repository root, after building bench):
 * {{{
 * ./weir bench 'weir.bench.OxBench'
 * }}}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array(JvmFlags))
class OxBench:

  private val noop: Int => Int = identity
  private val sleep: Int => Int = i =>
    Thread.sleep(SleepMillis.toLong)
    i

  private def source(n: Int): Flow[Int] = Flow.range(0, n - 1, 1)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopMapPar(): Unit = source(Tasks).mapPar(Concurrency)(noop).runDrain()

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopMapParUnordered(): Unit = source(Tasks).mapParUnordered(Concurrency)(noop).runDrain()

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopMap(): Unit = source(Tasks).map(noop).runDrain()

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepMapPar(): Unit = source(SleepTasks).mapPar(SleepConcurrency)(sleep).runDrain()

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepMapParUnordered(): Unit = source(SleepTasks).mapParUnordered(SleepConcurrency)(sleep).runDrain()

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepSequential(): Unit = source(SequentialSleeps).map(sleep).runDrain()
