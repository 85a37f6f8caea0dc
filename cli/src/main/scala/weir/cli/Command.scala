package weir.cli

import cats.effect.{ExitCode, IO}
import scopt.OParser

/**
 * One `./weir` command: the words that name it, its options (one scopt parser, whose usage `--help`
 * prints), and what it does. Every command parses its arguments the same way ([[CommandLine]]): `--help`
 * exits 0, an unknown option or a bad value exits 2 with `Error: …` naming them, before anything runs.
 * [[Commands]] lists them; a check over that list holds every command to this.
 */
trait Command:

  /** The words after `./weir` that name it: `List("durable", "limit")`, `List("lab", "compare")`. */
  def words: List[String]

  /** One line for the list of commands. */
  def summary: String

  /** Its options: what `--help` prints, and what the checks over every command read. */
  def parser: OParser[?, ?]

  /** Parses the arguments after [[words]] as [[run]] would, without running or printing: `Left(why)` if refused. */
  def check(args: List[String]): Either[String, Unit]

  /** Runs with the arguments after [[words]]; exit code 2 for bad arguments (after printing why). */
  def run(args: List[String]): IO[ExitCode]

  /** `./weir` and its words, as `--help` and errors name it. */
  final def name: String = words.mkString(" ")

object Command:

  /**
   * A command whose arguments are one scopt `parser` over `C`, starting from `defaults`: parsed, then
   * executed. A command that resolves its options further (reads a file, derives defaults) overrides
   * [[check]] and [[run]].
   */
  trait Parsed[C] extends Command:
    def parser: OParser[Unit, C]
    def defaults: C

    /** Runs the parsed options; the exit code is the command's. */
    def execute(options: C): IO[ExitCode]

    def check(args: List[String]): Either[String, Unit] = CommandLine.check(parser, args, defaults)

    def run(args: List[String]): IO[ExitCode] = CommandLine.runWithCode(parser, args, defaults)(execute)

  /** `words` run `target`, with its options: a short form (`./weir compare` for `./weir lab compare`). */
  final case class Alias(words: List[String], target: Command) extends Command:
    def summary: String = s"the same as `${target.name}`"
    def parser: OParser[?, ?] = target.parser
    def check(args: List[String]): Either[String, Unit] = target.check(args)
    def run(args: List[String]): IO[ExitCode] = target.run(args)
