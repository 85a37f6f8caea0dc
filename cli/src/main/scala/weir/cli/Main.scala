package weir.cli

import cats.effect.{ExitCode, IO}
import weir.runtime.WeirApp

/**
 * `./weir durable …` and `./weir console …`: the operator's commands, in a jar of their own that holds
 * weir-postgres, weir-console and what they need, and nothing of the lab.
 */
object Main extends WeirApp:

  /** The operator's commands; the lab's registry holds them too. */
  val operatorCommands: Vector[Command] = DurableCli.commands :+ ConsoleCli

  /** What this jar runs: the operator's commands, and the training run of its ahead-of-time cache. */
  val commands: Commands = Commands(operatorCommands :+ Train)

  def run(args: List[String]): IO[ExitCode] = commands.run(args)

  /**
   * Parses a command line as [[run]] would, without running or printing anything: `Left(why)` for an
   * unknown command or option or a bad value.
   */
  def check(args: List[String]): Either[String, Unit] = commands.check(args)
