package weir.runtime

import cats.effect.{IO, Resource}
import cats.effect.unsafe.{IORuntime, IORuntimeConfig, PatientSelectorSystem, PollingSystem}
import cats.syntax.all.*
import org.typelevel.log4cats.LoggerFactory
import weir.runtime.internal.TimerScheduler

/**
 * The Cats Effect runtime weir runs on: the default work-stealing compute pool and blocking pool, but
 * with timers (`IO.sleep`, `timeout`, …) served by an external scheduler thread instead of the compute
 * pool's own timer heaps.
 *
 * ==The hazard==
 * On Cats Effect 3.6.x and 3.7.1 the default runtime can livelock when many fibers sleeping a short time
 * wake together: one compute thread spins forever in `LocalQueue.enqueueBatch`, called from
 * `stealFromOtherWorkerThread`, and no fiber makes progress. That is the shape of a pipeline with a high
 * concurrency limit and short I/O-like tasks (typelevel/cats-effect#4674).
 *
 * ==The workaround==
 * A runtime built with `IORuntime.builder().setScheduler(...)` and a scheduler of its own thread takes the
 * timer wake-ups off the compute threads, where the livelock happens: weir's `TimerScheduler`, whose setters
 * hand timers in without a lock (`docs/adr/0025-timer-thread.md`). It costs one extra thread and a hop
 * through the pool's external queue on every timer wake-up. The runs that show the hang and its absence,
 * and the alternatives weighed: `docs/adr/0003-safe-runtime.md`.
 *
 * ==Wake-ups that do not stall==
 * Its compute threads park through [[cats.effect.unsafe.PatientSelectorSystem]]: a thread woken from its
 * park waits for its waker without spinning on the CPU the waker needs. Without it, a wake-up that the
 * kernel places on the waker's CPU stalls both threads for a time slice (milliseconds), which the timer
 * hand-over above makes frequent (`docs/adr/0024-patient-wake-up.md`). That system reads Cats Effect's
 * package-private state, so it is used only on the Cats Effect release it was written against; on any
 * other the compute threads park through Cats Effect's default polling system, and the first runtime built
 * says so, once per JVM: at WARN on the logger `weir.runtime` of the `LoggerFactory` given to
 * [[resource]] or [[WeirApp.runtimeLogs]], else on stderr. The timer thread uses only Cats Effect's public `Scheduler` interface and is used on
 * every release.
 *
 * ==When this can go==
 * When a Cats Effect release fixes typelevel/cats-effect#4674 and `weir.runtime.hang.HangProbe default queue`
 * (in this module's test sources, run by `HangDetectorSuite`) no longer wedges on it, weir's entry points
 * can return to the default runtime and this module can go.
 *
 * weir-core does not depend on this module: the engine is polymorphic (`F[_]: Async`) and runs on any
 * runtime; only entry points pick one.
 */
object WeirRuntime:

  /**
   * The safe runtime as a resource: built on acquire, shut down (compute, blocking and scheduler
   * threads) on release.
   *
   * Release it from a fiber that does not run on the runtime itself (the usual case: the resource is used
   * from the runtime that evaluates it, e.g. `resource.use(rt => IO.blocking(program.unsafeRunSync()(rt)))`).
   */
  def resource: Resource[IO, IORuntime] = resource(IORuntimeConfig())

  /** [[resource]] with a given runtime configuration (auto-yield, tracing, starvation checks…). */
  def resource(config: IORuntimeConfig): Resource[IO, IORuntime] =
    Resource.make(IO(unsafeCreate(config)))((_, shutdown) => IO.blocking(shutdown())).map(_._1)

  /**
   * [[resource]], its one notice (Cats Effect's default polling system chosen instead of weir's, on a
   * Cats Effect release other than the one it was written against) logged at WARN on `weir.runtime` of
   * `logs` instead of printed on stderr.
   */
  def resource(config: IORuntimeConfig, logs: LoggerFactory[IO]): Resource[IO, IORuntime] =
    logged(config, logs, PatientSelectorSystem.orDefault)

  /** The logger of the runtime's notice. */
  private[runtime] val loggerName: String = "weir.runtime"

  /** [[resource]] with `logs`, its polling system chosen by `choose`, which is given where to say why. */
  private[runtime] def logged(
      config: IORuntimeConfig,
      logs: LoggerFactory[IO],
      choose: (String => Unit) => PollingSystem
  ): Resource[IO, IORuntime] =
    Resource.make(IO {
      // the notice is said while the runtime is built, on this thread
      val notices = Vector.newBuilder[String]
      val (runtime, shutdown) = build(config, choose(notices += _: Unit))
      (runtime, shutdown, notices.result())
    })((_, shutdown, _) => IO.blocking(shutdown()))
      .evalTap((_, _, notices) => notices.traverse_(logs.getLoggerFromName(loggerName).warn(_)))
      .map(_._1)

  /**
   * Builds the safe runtime and returns it with its shutdown action, for `main` methods and other code
   * outside any effect. The caller owns the runtime and must call the shutdown action once (its threads
   * are daemon threads, so a JVM that simply exits need not).
   */
  def unsafeCreate(): (IORuntime, () => Unit) = unsafeCreate(IORuntimeConfig())

  /** [[unsafeCreate]] with a given runtime configuration. */
  def unsafeCreate(config: IORuntimeConfig): (IORuntime, () => Unit) =
    unsafeCreate(config, System.err.println)

  /**
   * [[unsafeCreate]], its one notice (see [[WeirRuntime]])
   * given to `notice`, once per JVM, while it builds the runtime, instead of printed on stderr.
   */
  def unsafeCreate(config: IORuntimeConfig, notice: String => Unit): (IORuntime, () => Unit) =
    build(config, PatientSelectorSystem.orDefault(notice))

  private def build(config: IORuntimeConfig, system: PollingSystem): (IORuntime, () => Unit) =
    val (scheduler, shutdownScheduler) = TimerScheduler.start(_.printStackTrace())
    // the builder's shutdown stops the compute pool, the blocking pool and this scheduler
    val runtime = IORuntime
      .builder()
      .setScheduler(scheduler, shutdownScheduler)
      .setPollingSystem(system)
      .setConfig(config)
      .build()
    (runtime, () => runtime.shutdown())
