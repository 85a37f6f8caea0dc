package weir.bench

import org.openjdk.jmh.annotations.*
import org.openjdk.jmh.infra.Blackhole
import weir.bench.Workload.*

import java.util.concurrent.{ArrayBlockingQueue, ExecutorService, Executors, TimeUnit}

/**
 * The floor: what handing out a task costs with no library at all.
 *   - `noopLoop`: the tasks called in a plain loop (a function call per task; the baseline);
 *   - `noopHandoff`: a single-producer/single-consumer handoff between two platform threads through an
 *     `ArrayBlockingQueue` of capacity [[Concurrency]]: a producer thread puts every task, the benchmark
 *     thread takes and runs it — the cheapest way to move work across threads with blocking when full
 *     or empty.
 *   - `sleepSequential`: ten 1 ms `Thread.sleep`s in a row on a platform thread (the ideal makespan as
 *     the OS delivers it).
 *
 * Run (from the repository root, after building bench):
 * {{{
 * ./weir bench 'weir.bench.FloorBench'
 * }}}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array(JvmFlags))
class FloorBench:
  private var producer: ExecutorService = scala.compiletime.uninitialized
  private val task: Int => Int = i => i + 1

  @Setup(Level.Trial)
  def startProducer(): Unit = producer = Executors.newSingleThreadExecutor()

  @TearDown(Level.Trial)
  def stopProducer(): Unit =
    producer.shutdownNow()
    val _ = producer.awaitTermination(10, TimeUnit.SECONDS)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopLoop(): Long =
    var sum = 0L
    var i = 0
    while i < Tasks do
      sum += task(i)
      i += 1
    sum

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopHandoff(): Long =
    val queue = new ArrayBlockingQueue[Integer](Concurrency)
    producer.execute { () =>
      var i = 0
      while i < Tasks do
        queue.put(Integer.valueOf(i))
        i += 1
    }
    var sum = 0L
    var i = 0
    while i < Tasks do
      sum += task(queue.take().intValue)
      i += 1
    sum

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepSequential(bh: Blackhole): Unit =
    Inline.run(SequentialSleeps, () => Thread.sleep(SleepMillis.toLong), bh)
