package weir.lab

import cats.effect.{ExitCode, IO}
import weir.cli.{Command, Commands}
import weir.runtime.WeirApp

/**
 * `./weir <command>`: the lab's entry point. Runs on [[weir.runtime.WeirRuntime]] (timers off the compute pool), so
 * the many short sleeps of the compare experiment cannot wedge the pool (typelevel/cats-effect#4674).
 */
object Main extends WeirApp:

  /**
   * Every command the lab's jar runs: the experiments under `lab`, `compare` as the main demo's short form
   * of `lab compare`, the operator's commands (which the launcher runs from their own jar) and the training
   * run of the launcher's ahead-of-time cache.
   */
  val commands: Commands = Commands(
    Vector(Command.Alias(List("compare"), weir.lab.compare.Compare)) ++ Experiments.all ++
      weir.cli.Main.operatorCommands :+ Train
  )

  def run(args: List[String]): IO[ExitCode] = commands.run(args)

  /**
   * Parses a `./weir` command line (not `test` or `bench`, which the launcher runs) as [[run]] would,
   * without running or printing anything: `Left(why)` for an unknown command or option or a bad value. The
   * docs check validates every documented command with it.
   */
  def check(args: List[String]): Either[String, Unit] = commands.check(args)
