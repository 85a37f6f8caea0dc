package weir.runtime

import cats.effect.{IO, IOApp}
import cats.effect.unsafe.IORuntime
import org.typelevel.log4cats.LoggerFactory

/**
 * An `IOApp` that runs on [[WeirRuntime]] instead of Cats Effect's default runtime, so that a program
 * with many short timers (a pipeline of 1000 workers whose tasks sleep a millisecond) cannot wedge the
 * compute pool (typelevel/cats-effect#4674; see [[WeirRuntime]] for the hazard and when this can go).
 *
 * {{{
 * object Main extends WeirApp.Simple:
 *   def run: IO[Unit] = Pipeline(tasks).process(handle).run.void
 * }}}
 *
 * How it works: `IOApp.main` installs a runtime that `runtime` returns (when it is not null) as the
 * global runtime instead of building its own, so `IORuntime.global` is this runtime too inside the app.
 * `runtimeConfig` is still honoured; `computeWorkerThreadCount` and `pollingSystem` are not (the pool
 * keeps one thread per core and parks through the polling system [[WeirRuntime]] chooses). The runtime is not
 * shut down explicitly: its threads are daemon threads and `IOApp` ends the JVM.
 */
trait WeirApp extends IOApp:

  /**
   * Where the runtime's one notice goes (see [[WeirRuntime]]): at WARN on the logger `weir.runtime` of this
   * factory, or on stderr when `None` (the default). Read once, when the runtime is built.
   */
  protected def runtimeLogs: Option[LoggerFactory[IO]] = None

  override protected lazy val runtime: IORuntime =
    runtimeLogs match
      case None => WeirRuntime.unsafeCreate(runtimeConfig)._1
      case Some(logs) =>
        // the notice is said while the runtime is built, then logged on it: the app has not started yet
        val notices = Vector.newBuilder[String]
        val built = WeirRuntime.unsafeCreate(runtimeConfig, notices += _: Unit)._1
        notices.result().foreach(n =>
          logs.getLoggerFromName(WeirRuntime.loggerName).warn(n).unsafeRunSync()(using built)
        )
        built

object WeirApp:

  /** [[WeirApp]] for programs that take no arguments and always exit with success. */
  trait Simple extends IOApp.Simple with WeirApp
