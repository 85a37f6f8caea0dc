package weir.lab

import cats.effect.{ExitCode, IO}
import weir.WeirApp

/**
 * `./weir <command>`: the lab's entry point. Runs on [[weir.WeirRuntime]] (timers off the compute pool), so
 * the many short sleeps of `compare` cannot wedge the pool (typelevel/cats-effect#4674).
 */
object Main extends WeirApp:
  def run(args: List[String]): IO[ExitCode] =
    args match
      case "lab" :: rest => Experiments.run(rest)
      case "durable" :: rest => DurableCli.run(rest)
      case _ => command(args)

  private def command(args: List[String]): IO[ExitCode] =
    Cli.parse(args) match
      case None => IO.pure(ExitCode(2))
      case Some(Cli.Command.Example(tasks, limit)) => Example.run(tasks, limit).as(ExitCode.Success)
      case Some(Cli.Command.Soak(tasks, limit, progress)) =>
        Soak.run(tasks, limit, progress).as(ExitCode.Success)
      case Some(Cli.Command.Compare(settings)) => Compare.run(settings).as(ExitCode.Success)
