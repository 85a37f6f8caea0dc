package weir.bench

import org.openjdk.jmh.annotations.*
import org.openjdk.jmh.infra.Blackhole
import weir.bench.Workload.*

import java.util.concurrent.{Semaphore, TimeUnit}

/**
 * JDK virtual threads: a virtual thread per task, started after acquiring a permit of a
 * `java.util.concurrent.Semaphore` (the JDK's recommended way to limit concurrency with virtual
 * threads); the run ends when every permit is back. The sleep workload blocks its virtual thread in
 * `Thread.sleep(1)`.
 * Baselines: the same tasks called inline in a loop on the benchmark thread; ten 1 ms sleeps in a row.
 *
 * Run (from the repository root, after building bench):
 * {{{
 * ./weir bench 'weir.bench.VirtualThreadBench'
 * }}}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array(JvmFlags))
class VirtualThreadBench:

  private val noop: Runnable = () => ()
  private val sleep: Runnable = () => Thread.sleep(SleepMillis.toLong)

  private def gated(n: Int, permits: Int, task: Runnable): Unit =
    val semaphore = new Semaphore(permits)
    val body: Runnable = () =>
      try task.run()
      finally semaphore.release()
    var i = 0
    while i < n do
      semaphore.acquire()
      val _ = Thread.ofVirtual().start(body)
      i += 1
    semaphore.acquire(permits)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopSemaphore(): Unit = gated(Tasks, Concurrency, noop)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopInline(bh: Blackhole): Unit = Inline.run(Tasks, noop, bh)

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepSemaphore(): Unit = gated(SleepTasks, SleepConcurrency, sleep)

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepSequential(bh: Blackhole): Unit = Inline.run(SequentialSleeps, sleep, bh)
