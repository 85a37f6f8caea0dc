package weir.bench

import cats.effect.IO
import cats.effect.unsafe.IORuntime
import org.openjdk.jmh.annotations.*
import weir.WeirRuntime

/**
 * Benchmark state for everything that runs on Cats Effect (weir, fs2, plain Cats Effect): one runtime per
 * trial, built by [[weir.WeirRuntime]] (an external timer scheduler), never `IORuntime.global`, whose
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

  @TearDown(Level.Trial)
  def stopRuntime(): Unit = shutdown()

  /** Runs `io` on this trial's runtime from the JMH thread, waiting for its result. */
  protected final def unsafeRun[A](io: IO[A]): A = io.unsafeRunSync()(using runtime)
