package weir.lab

import cats.effect.{ExitCode, IO, IOApp}

/** `./weir <command>`: the lab's entry point. */
object Main extends IOApp:
  def run(args: List[String]): IO[ExitCode] =
    Cli.parse(args) match
      case None => IO.pure(ExitCode(2))
      case Some(Cli.Command.Example(tasks, limit)) => Example.run(tasks, limit).as(ExitCode.Success)
      case Some(Cli.Command.Soak(tasks, limit, progress)) => Soak.run(tasks, limit, progress).as(ExitCode.Success)
