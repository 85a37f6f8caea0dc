package weir.cli

import cats.effect.{ExitCode, IO}
import scopt.{OEffect, OParser}

/**
 * How every `./weir` command parses its arguments with scopt: the parse returns the error instead of
 * printing it (so that it can be tested and checked without running anything), `--help` prints the usage
 * and exits 0, and bad arguments print `Error: …` naming the option and the value, then exit 2.
 */
object CommandLine:

  /** The result of parsing a command's arguments. */
  enum Parsed[+C]:
    case Ok(config: C)

    /** `--help` was asked for: print `usage` and stop. */
    case Help(usage: String)

    /** Bad arguments: `error` names the option and the value. */
    case Bad(error: String)

  /** A scopt `validate` for a number option that must be > 0; the error names the option and the value. */
  def positive[N](option: String)(using N: Numeric[N]): N => Either[String, Unit] =
    n => if N.gt(n, N.zero) then Right(()) else Left(s"$option must be > 0, was: $n")

  /** Runs scopt without side effects: errors are collected, not printed. */
  def parse[C](parser: OParser[?, C], args: Seq[String], init: C): Parsed[C] =
    val (config, effects) = OParser.runParser(parser, args, init)
    val errors = effects.collect { case OEffect.ReportError(msg) => msg }
    // `--help` wins over the checks of a whole command line (`a command is required`), which scopt
    // still runs after it
    if effects.exists(_.isInstanceOf[OEffect.Terminate]) then
      Parsed.Help(effects.collect { case OEffect.DisplayToOut(msg) => msg }.mkString("\n"))
    else if errors.nonEmpty then Parsed.Bad(errors.mkString("; "))
    else config.fold(Parsed.Bad("invalid arguments"))(Parsed.Ok(_))

  /** Parses without running anything: `Left(error)` for bad arguments; `--help` is a valid command line. */
  def check[C](parser: OParser[?, C], args: Seq[String], init: C): Either[String, Unit] =
    parse(parser, args, init) match
      case Parsed.Bad(error) => Left(error)
      case Parsed.Ok(_) | Parsed.Help(_) => Right(())

  /**
   * Parses, then runs `body` with the result; `--help` prints the usage (exit 0), bad arguments print
   * `Error: ...` and the usage on standard error (exit 2).
   */
  def runWith[C](parser: OParser[?, C], args: Seq[String], init: C)(body: C => IO[Unit]): IO[ExitCode] =
    runWithCode(parser, args, init)(c => body(c).as(ExitCode.Success))

  /** As [[runWith]], but the body decides the exit code (a run that found a failure, a command that failed). */
  def runWithCode[C](
      parser: OParser[?, C],
      args: Seq[String],
      init: C
  )(body: C => IO[ExitCode]): IO[ExitCode] =
    parse(parser, args, init) match
      case Parsed.Ok(c) => body(c)
      case Parsed.Help(usage) => IO.println(usage).as(ExitCode.Success)
      case Parsed.Bad(error) => refuse(error, OParser.usage(parser))

  /** Prints `Error: why` and the usage on standard error: exit code 2. */
  def refuse(why: String, usage: String): IO[ExitCode] =
    IO.consoleForIO.errorln(s"Error: $why\n$usage").as(ExitCode(2))
