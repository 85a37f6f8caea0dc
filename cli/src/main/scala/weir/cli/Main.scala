package weir.cli

import cats.effect.{ExitCode, IO}
import weir.runtime.WeirApp

/**
 * `./weir durable …` and `./weir console …`: the operator's commands, in a jar of their own that holds
 * weir-postgres, weir-console and what they need, and nothing of the lab.
 */
object Main extends WeirApp:

  def run(args: List[String]): IO[ExitCode] =
    args match
      case "durable" :: rest => DurableCli.run(rest)
      case "console" :: rest => ConsoleCli.run(rest)
      case "train" :: Nil => Train.run
      case _ =>
        val usage = "Usage: weir durable <command> [options] | weir console [options]   (--help after either)"
        if args.headOption.contains("--help") then IO.println(usage).as(ExitCode.Success)
        else CommandLine.refuse(s"unknown command '${args.mkString(" ")}'", usage)

  /**
   * Parses a command line as [[run]] would, without running or printing anything: `Left(why)` for an
   * unknown command or option or a bad value. The docs check validates every documented command with it.
   */
  def check(args: List[String]): Either[String, Unit] =
    args match
      case "durable" :: rest => CommandLine.check(DurableCli.parser, rest, DurableCli.Options())
      case "console" :: rest => CommandLine.check(ConsoleCli.parser, rest, ConsoleCli.Options())
      case _ => Left(s"unknown command '${args.mkString(" ")}'")
