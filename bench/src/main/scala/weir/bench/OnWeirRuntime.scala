package weir.bench

import cats.effect.IO
import cats.effect.unsafe.IORuntime
import org.openjdk.jmh.annotations.*
import weir.runtime.WeirRuntime
import weir.bench.OnWeirRuntime.ComputeThreads

/**
 * Benchmark state for everything that runs on Cats Effect (weir, fs2, plain Cats Effect): one runtime per
 * trial, built by [[weir.runtime.WeirRuntime]] (an external timer scheduler), never `IORuntime.global`, whose
 * compute pool can wedge forever when ~1000 fibers wake from 1 ms sleeps (typelevel/cats-effect#4674,
 * docs/adr/0003-safe-runtime.md).
 *
 * With `-Dweir.bench.computeThreads=n` (`-jvmArgsPrepend` on JMH's command line), a trial runs instead on
 * Cats Effect's own runtime with a compute pool of `n` threads (timers on the pool): a diagnostic, to see
 * what a benchmark costs on one thread against how its work is shared by two (`-XX:ActiveProcessorCount`
 * does not do it: the pool keeps at least two threads).
 */
@State(Scope.Benchmark)
abstract class OnWeirRuntime:
  private var runtime: IORuntime = scala.compiletime.uninitialized
  private var shutdown: () => Unit = scala.compiletime.uninitialized

  @Setup(Level.Trial)
  def startRuntime(): Unit =
    val (rt, stop) = sys.props.get(ComputeThreads).fold(WeirRuntime.unsafeCreate())(onThreads)
    runtime = rt
    shutdown = stop
    started()

  @TearDown(Level.Trial)
  def stopRuntime(): Unit =
    try stopping()
    finally shutdown()

  /**
   * What a benchmark sets up on the runtime once it runs, and takes down before it stops: hooks rather than
   * annotated methods of its own, whose order against this class's JMH does not promise.
   */
  protected def started(): Unit = ()
  protected def stopping(): Unit = ()

  private def onThreads(n: String): (IORuntime, () => Unit) =
    val threads = n.toIntOption.filter(_ > 0).getOrElse {
      throw new IllegalArgumentException(s"-D$ComputeThreads must be a positive integer, was: $n")
    }
    val (pool, _, stop) = IORuntime.createWorkStealingComputeThreadPool(threads = threads)
    val rt = IORuntime.builder().setCompute(pool, stop).setScheduler(pool, () => ()).build()
    (rt, () => rt.shutdown())

  /** Runs `io` on this trial's runtime from the JMH thread, waiting for its result. */
  protected final def unsafeRun[A](io: IO[A]): A = io.unsafeRunSync()(using runtime)

object OnWeirRuntime:
  /** The system property naming a compute pool's size: see [[OnWeirRuntime]]. */
  final val ComputeThreads = "weir.bench.computeThreads"
