package weir.bench

import cats.effect.IO
import cats.effect.unsafe.IORuntime
import org.openjdk.jmh.annotations.*
import weir.runtime.WeirRuntime

import java.util.concurrent.TimeUnit
import scala.concurrent.duration.*

/**
 * What waking another fiber costs a fiber that has just come back from a timer, on weir's runtime (timers on
 * an external scheduler thread, [[weir.runtime.WeirRuntime]]) and on Cats Effect's default one (timers in the compute
 * pool). One round: a fiber waits on a `Deferred`; the benchmark's fiber sleeps 1 ms, completes it, and waits
 * for that fiber to end; ten rounds per operation. The score is ns per round, so anything beyond the 1 ms
 * sleep is the timer's lateness plus the wake-up; `sleep` is the same rounds without the other fiber, so the
 * difference of the two is what the wake-up costs on each runtime (docs/lab/compare.md, the one-slot gap).
 *
 * Run (from the repository root):
 * {{{
 * ./weir bench 'weir.bench.WakeBench'
 * }}}
 */
@State(Scope.Benchmark)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array(Workload.JvmFlags))
class WakeBench:
  @Param(Array("weir", "default"))
  var runtime: String = scala.compiletime.uninitialized

  private var rt: IORuntime = scala.compiletime.uninitialized
  private var shutdown: () => Unit = scala.compiletime.uninitialized

  @Setup(Level.Trial)
  def start(): Unit =
    val (r, stop) =
      if runtime == "weir" then WeirRuntime.unsafeCreate()
      else
        val built = IORuntime.builder().build()
        (built, () => built.shutdown())
    rt = r
    shutdown = stop

  @TearDown(Level.Trial)
  def stop(): Unit = shutdown()

  private val round: IO[Unit] =
    for
      woken <- IO.deferred[Unit]
      waiter <- woken.get.start
      _ <- IO.sleep(1.millis)
      _ <- woken.complete(())
      _ <- waiter.join
    yield ()

  private val sleepOnly: IO[Unit] = IO.sleep(1.millis)

  @Benchmark
  @OperationsPerInvocation(WakeBench.Rounds)
  def sleepThenWake(): Unit = round.replicateA_(WakeBench.Rounds).unsafeRunSync()(using rt)

  /** The same rounds without the other fiber: the timer alone, to subtract. */
  @Benchmark
  @OperationsPerInvocation(WakeBench.Rounds)
  def sleep(): Unit = sleepOnly.replicateA_(WakeBench.Rounds).unsafeRunSync()(using rt)

object WakeBench:
  final val Rounds = 10
