package weir.bench

import cats.effect.IO
import cats.effect.unsafe.IORuntime
import org.openjdk.jmh.annotations.*
import weir.runtime.WeirRuntime

/**
 * Benchmark state for everything that runs on Cats Effect (weir, fs2, plain Cats Effect): one runtime per
 * trial, built by [[weir.runtime.WeirRuntime]] (an external timer scheduler), never `IORuntime.global`, whose
 * compute pool can wedge forever when ~1000 fibers wake from 1 ms sleeps (typelevel/cats-effect#4674,
 * docs/adr/0003-safe-runtime.md).
 */
@State(Scope.Benchmark)
abstract class OnWeirRuntime:
  private var runtime: IORuntime = scala.compiletime.uninitialized
  private var shutdown: () => Unit = scala.compiletime.uninitialized

  @Setup(Level.Trial)
  def startRuntime(): Unit =
    val (rt, stop) = WeirRuntime.unsafeCreate()
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

  /** Runs `io` on this trial's runtime from the JMH thread, waiting for its result. */
  protected final def unsafeRun[A](io: IO[A]): A = io.unsafeRunSync()(using runtime)
