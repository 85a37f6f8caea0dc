package weir.bench

import cats.effect.{FiberIO, IO}
import cats.effect.std.{Queue, Semaphore}
import cats.syntax.all.*
import org.openjdk.jmh.annotations.*
import weir.Defaults
import weir.bench.Workload.*

import java.util.concurrent.TimeUnit
import scala.concurrent.duration.*

/**
 * Plain Cats Effect 3.7, the two shapes a user would write by hand:
 *   - `queueWorkers`: `concurrency` long-lived worker fibers draining a bounded `Queue` (capacity
 *     weir's default buffer, 1024) fed by one producer fiber; each worker stops at a sentinel;
 *   - `semaphore`: a fiber per task, started after acquiring a permit of a `Semaphore`.
 *   - `queueWorkerBursts`: [[BurstBench]]'s shape by hand, without per-key order: as many worker fibers as a
 *     burst, parked on an unbounded `Queue`; a burst offered at once, each task's outcome offered to a second
 *     queue, which a reader drains in chunks and, once a burst's outcomes are all read, offers the next burst.
 *     The floor of a burst reaching parked fibers with Cats Effect's own queues.
 * Baselines: the same tasks one after another in a single fiber; ten 1 ms sleeps in a row (on weir's runtime,
 * and on Cats Effect's default one, whose timers live in the compute pool); and the sleeps' wave: as many
 * fibers as the concurrency, each sleeping its share of the tasks in a row, so that nothing is handed over
 * and what is left is what the runtime's timers cost at that concurrency.
 *
 * Run (from the repository root, after building bench):
 * {{{
 * ./weir bench 'weir.bench.CatsEffectBench'
 * }}}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array(JvmFlags))
class CatsEffectBench extends OnWeirRuntime:

  private val noop: Int => IO[Unit] = _ => IO.unit
  private val sleep: Int => IO[Unit] = _ => IO.sleep(SleepMillis.millis)

  private def queueWorkers(n: Int, workers: Int, task: Int => IO[Unit]): IO[Unit] =
    Queue.bounded[IO, Int](Defaults.bufferCapacity).flatMap { queue =>
      def produce(i: Int): IO[Unit] =
        if i == n then queue.offer(-1).replicateA_(workers) else queue.offer(i).flatMap(_ => produce(i + 1))
      lazy val work: IO[Unit] = queue.take.flatMap(i => if i < 0 then IO.unit else task(i).flatMap(_ => work))
      IO.both(produce(0), work.parReplicateA_(workers)).void
    }

  // A fiber per task; completion is awaited by taking back every permit. The bare `start` is the idiom
  // being measured (no fiber outlives the run: each one releases its permit last).
  private def semaphore(n: Int, permits: Int, task: Int => IO[Unit]): IO[Unit] =
    Semaphore[IO](permits.toLong).flatMap { sem =>
      def loop(i: Int): IO[Unit] =
        if i == n then sem.acquireN(permits.toLong)
        else sem.acquire.flatMap(_ => task(i).guarantee(sem.release).start).flatMap(_ => loop(i + 1))
      loop(0)
    }

  // `fibers` bare fibers each running `each`, started one after another, then joined.
  private def wave(fibers: Int, each: IO[Unit]): IO[Unit] =
    def startAll(i: Int, started: List[FiberIO[Unit]]): IO[List[FiberIO[Unit]]] =
      if i == fibers then IO.pure(started) else each.start.flatMap(f => startAll(i + 1, f :: started))
    startAll(0, Nil).flatMap(_.foldLeft(IO.unit)((joined, f) => joined.flatMap(_ => f.joinWithNever)))

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopQueueWorkers(): Unit = unsafeRun(queueWorkers(Tasks, Concurrency, noop))

  // the workers stop at a sentinel once the last burst's outcomes are read
  private def queueWorkerBursts: IO[Long] =
    import BurstBench.{Burst, Tasks => BurstTasks}
    (Queue.unbounded[IO, Int], Queue.unbounded[IO, Int]).flatMapN { (tasks, outcomes) =>
      def burst(n: Int): IO[Unit] =
        if n * Burst >= BurstTasks then tasks.tryOfferN(List.fill(Burst)(-1)).void
        else tasks.tryOfferN(List.range(n * Burst, (n + 1) * Burst)).void
      lazy val work: IO[Unit] =
        tasks.take.flatMap(i => if i < 0 then IO.unit else noop(i) *> outcomes.offer(i) *> work)
      def read(seen: Long): IO[Long] =
        if seen == BurstTasks then IO.pure(seen)
        else
          outcomes.take.flatMap(_ => outcomes.tryTakeN(None)).flatMap { more =>
            val now = seen + 1 + more.size
            (if now % Burst == 0 then burst((now / Burst).toInt) else IO.unit) *> read(now)
          }
      burst(0) *> IO.both(read(0), work.parReplicateA_(Burst)).map(_._1)
    }

  @Benchmark
  @OperationsPerInvocation(BurstBench.Tasks)
  def noopQueueWorkerBursts(): Long = unsafeRun(queueWorkerBursts)

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopSemaphore(): Unit = unsafeRun(semaphore(Tasks, Concurrency, noop))

  @Benchmark
  @OperationsPerInvocation(Tasks)
  def noopSequential(): Unit = unsafeRun(Sequential.io(Tasks, noop))

  @Benchmark
  @OperationsPerInvocation(WideTasks)
  def noopWideQueueWorkers(): Unit = unsafeRun(queueWorkers(WideTasks, WideTasks, noop))

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepQueueWorkers(): Unit = unsafeRun(queueWorkers(SleepTasks, SleepConcurrency, sleep))

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepSemaphore(): Unit = unsafeRun(semaphore(SleepTasks, SleepConcurrency, sleep))

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepSequential(): Unit = unsafeRun(Sequential.io(SequentialSleeps, sleep))

  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepWave(): Unit =
    unsafeRun(wave(SleepConcurrency, Sequential.io(SleepTasks / SleepConcurrency, sleep)))

  // the same on Cats Effect's default runtime, whose timers live in the compute pool: is the sleep floor
  // the external timer's? (One fiber sleeping cannot trigger typelevel/cats-effect#4674, which needs
  // about a thousand fibers waking together.)
  @Benchmark
  @OutputTimeUnit(TimeUnit.MILLISECONDS)
  def sleepSequentialDefaultRuntime(): Unit =
    Sequential.io(SequentialSleeps, sleep).unsafeRunSync()(using cats.effect.unsafe.implicits.global)
