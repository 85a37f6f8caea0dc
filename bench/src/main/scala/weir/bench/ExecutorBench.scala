package weir.bench

import org.openjdk.jmh.annotations.*
import org.openjdk.jmh.infra.Blackhole
import weir.bench.Workload.*

import java.util.concurrent.{ExecutorService, Executors, ScheduledExecutorService, Semaphore, TimeUnit}

/**
 * A plain fixed thread pool (one thread per core) gated by a `java.util.concurrent.Semaphore`: the
 * submitter acquires a permit per task, the task releases it; the run ends when every permit is back.
 * The sleep workload is asynchronous: the task, on the pool, schedules its continuation 1 ms later on a
 * single-thread `ScheduledExecutorService`, which hands it back to the pool to release the permit.
 * Baselines: the same tasks called inline in a loop on the benchmark thread; ten 1 ms scheduled hops in
 * a row.
 *
 * Run (from the repository root, after building bench):
 * {{{
 * ./weir bench 'weir.bench.ExecutorBench'
 * }}}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array(JvmFlags))
class ExecutorBench:
  private var pool: ExecutorService = scala.compiletime.uninitialized
  private var scheduler: ScheduledExecutorService = scala.compiletime.uninitialized

  @Setup(Level.Trial)
  def startPools(): Unit =
    pool = Executors.newFixedThreadPool(Runtime.getRuntime.availableProcessors)
    scheduler = Executors.newSingleThreadScheduledExecutor()

  @TearDown(Level.Trial)
  def stopPools(): Unit =
    pool.shutdownNow()
    scheduler.shutdownNow()
    val _ = pool.awaitTermination(10, TimeUnit.SECONDS) && scheduler.awaitTermination(10, TimeUnit.SECONDS)

  private val noop: Runnable = () => ()

  /** Runs `n` tasks, at most `permits` at once; `task` gets the action that ends it (releases a permit). */
  private def gated(n: Int, permits: Int)(task: Runnable => Runnable): Unit =
    val semaphore = new Semaphore(permits)
    val done: Runnable = () => semaphore.release()
    val body = task(done)
    var i = 0
    while i < n do
      semaphore.acquire()
      pool.execute(body)
      i += 1
    semaphore.acquire(permits)

  /** Completes `done` on the pool, [[SleepMillis]] ms from now. */
  private def sleepThen(done: Runnable): Runnable =
    val resume: Runnable = () => pool.execute(done)
    () =>
      val _ = scheduler.schedule(resume, SleepMillis.toLong, TimeUnit.MILLISECONDS)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopSemaphore(): Unit =
    gated(Tasks, Concurrency) { done => () =>
      noop.run()
      done.run()
    }

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopInline(bh: Blackhole): Unit = Inline.run(Tasks, noop, bh)

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepSemaphore(): Unit = gated(SleepTasks, SleepConcurrency)(sleepThen)

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepSequential(): Unit =
    // each hop waits for the previous one: the same chain one task takes, ten times
    val gate = new Semaphore(0)
    val hop = sleepThen(() => gate.release())
    var i = 0
    while i < SequentialSleeps do
      pool.execute(hop)
      gate.acquire()
      i += 1
