package weir.lab

import cats.effect.{ExitCode, IO}
import weir.runtime.WeirApp

/**
 * `./weir <command>`: the lab's entry point. Runs on [[weir.runtime.WeirRuntime]] (timers off the compute pool), so
 * the many short sleeps of the compare experiment cannot wedge the pool (typelevel/cats-effect#4674).
 */
object Main extends WeirApp:
  def run(args: List[String]): IO[ExitCode] =
    args match
      case "lab" :: rest => Experiments.run(rest)
      case "compare" :: rest => Experiments.run("compare" :: rest)
      case ("durable" | "console") :: _ => weir.cli.Main.run(args)
      case "train" :: Nil => Train.run
      case _ => command(args)

  private def command(args: List[String]): IO[ExitCode] =
    Cli.parse(args) match
      case None => IO.pure(ExitCode(2))
      case Some(Cli.Command.Example(tasks, limit, otel)) =>
        OtelEndpoint.around(otel)(Example.run(tasks, limit, _)).as(ExitCode.Success)
      case Some(Cli.Command.Soak(tasks, limit, progress, otel)) =>
        OtelEndpoint.around(otel)(Soak.run(tasks, limit, progress, _)).as(ExitCode.Success)

  /**
   * Parses a `./weir` command line (the lab CLI's part: not `test` or `bench`, which the launcher runs) as
   * [[run]] would, without running or printing anything: `Left(why)` for an unknown command or option or a
   * bad value. The docs check validates every documented command with it.
   */
  def check(args: List[String]): Either[String, Unit] =
    args match
      case "lab" :: rest => Experiments.check(rest)
      case "compare" :: rest => Experiments.check("compare" :: rest)
      case ("durable" | "console") :: _ => weir.cli.Main.check(args)
      case "train" :: Nil => Train.check
      case _ => Cli.check(args)
