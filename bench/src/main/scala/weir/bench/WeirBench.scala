package weir.bench

import cats.effect.IO
import fs2.Stream
import org.openjdk.jmh.annotations.*
import weir.{Limit, TaskOrder, Pipeline}
import weir.bench.Workload.*

import java.util.concurrent.TimeUnit
import scala.concurrent.duration.*

/**
 * weir's per-task cost: `Pipeline(...).process(task).run`, unordered and in input order, fed by
 * `Stream.range` (one task per chunk, like the fs2 peers) or by a single chunk of all tasks (`OneChunk`),
 * and per key (`ByKey`: [[Workload.Keys]] keys, task `i` has key `i % Keys`).
 *
 * Baselines in this class: the same tasks run one after another in a single fiber (`noopSequential`: what
 * an effect costs with no concurrency at all) and ten 1 ms sleeps in a row (`sleepSequential`: the ideal
 * makespan as this runtime's timer delivers it).
 *
 * Run (from the repository root, after building bench):
 * {{{
 * ./weir bench 'weir.bench.WeirBench'
 * ./weir bench 'WeirBench.noop' -prof gc
 * }}}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array(JvmFlags))
class WeirBench extends OnWeirRuntime:

  private val noop: Int => IO[Unit] = _ => IO.unit
  private val sleep: Int => IO[Unit] = _ => IO.sleep(SleepMillis.millis)

  // `Stream.range` emits one element per chunk (as do the fs2 peers' sources): the producer offers each
  // task on its own. `oneChunk` hands the engine all tasks as a single chunk, which isolates the workers'
  // side of the cost.
  private def source(n: Int, oneChunk: Boolean): Stream[IO, Int] =
    if oneChunk then Stream.emits(0 until n).covary[IO] else Stream.range(0, n).covary[IO]

  private def pipeline(
      n: Int,
      limit: Int,
      order: TaskOrder[Int],
      task: Int => IO[Unit],
      oneChunk: Boolean = false
  )
      : Long =
    unsafeRun(
      Pipeline(source(n, oneChunk))
        .process(task)
        .withLimit(Limit.fixed(limit))
        .withOrder(order)
        .run
        .map(_.succeeded)
    )

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopUnordered(): Long = pipeline(Tasks, Concurrency, TaskOrder.unordered, noop)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopOrdered(): Long = pipeline(Tasks, Concurrency, TaskOrder.inputOrder, noop)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopUnorderedOneChunk(): Long = pipeline(Tasks, Concurrency, TaskOrder.unordered, noop, oneChunk = true)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopOrderedOneChunk(): Long = pipeline(Tasks, Concurrency, TaskOrder.inputOrder, noop, oneChunk = true)

  // per-key ordering with many more keys than workers: what claiming and releasing a key costs per task
  private val key: Int => Int = _ % Keys

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopByKey(): Long = pipeline(Tasks, Concurrency, TaskOrder.byKey(key), noop)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopByKeyOneChunk(): Long = pipeline(Tasks, Concurrency, TaskOrder.byKey(key), noop, oneChunk = true)

  // as many workers as tasks: a worker's start and end are part of each task's cost
  @Benchmark
  @OperationsPerInvocation(WideTasks)
  def noopWide(): Long = pipeline(WideTasks, WideTasks, TaskOrder.unordered, noop, oneChunk = true)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopSequential(): Unit = unsafeRun(Sequential.io(Tasks, noop))

  // a whole run of one no-op task: what a run costs on its own (its set-up, its end, its summary), which
  // the rows above spread over their tasks; compiled here, where a program that starts few runs pays it
  // at the JVM's first tiers, several times over (docs/lab/bench.md, "Steady state")
  @Benchmark
  @OutputTimeUnit(TimeUnit.MICROSECONDS)
  def noopRunOfOne(): Long = pipeline(1, Concurrency, TaskOrder.unordered, noop, oneChunk = true)

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepUnordered(): Long = pipeline(SleepTasks, SleepConcurrency, TaskOrder.unordered, sleep)

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepUnorderedOneChunk(): Long =
    pipeline(SleepTasks, SleepConcurrency, TaskOrder.unordered, sleep, oneChunk = true)

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepOrdered(): Long = pipeline(SleepTasks, SleepConcurrency, TaskOrder.inputOrder, sleep)

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepSequential(): Unit = unsafeRun(Sequential.io(SequentialSleeps, sleep))
