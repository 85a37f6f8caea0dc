package weir.runtime

import cats.effect.IOApp
import cats.effect.unsafe.IORuntime

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
  override protected lazy val runtime: IORuntime = WeirRuntime.unsafeCreate(runtimeConfig)._1

object WeirApp:

  /** [[WeirApp]] for programs that take no arguments and always exit with success. */
  trait Simple extends IOApp.Simple with WeirApp
