package weir.lab

import cats.effect.{ExitCode, IO}

/**
 * One `./weir lab <name>` experiment. Each experiment owns its options (parsed with scopt in its own file,
 * under the program name `weir lab <name>`), its table, JSON and chart; [[Experiments.all]] lists them.
 */
trait Experiment:
  /** The subcommand's name, e.g. `channels`. */
  def name: String

  /** One line for `./weir lab --help`. */
  def summary: String

  /** Runs with the arguments after `lab <name>`; exit code 2 for bad options (after printing why). */
  def run(args: List[String]): IO[ExitCode]

  /**
   * Parses the arguments after `lab <name>` as [[run]] would, without running anything or printing:
   * `Left(why)` for an unknown option or a bad value. The docs check (`DocCommandsSuite`) validates every
   * documented `./weir lab` command with it, so an experiment without one cannot be documented.
   */
  def check(args: List[String]): Either[String, Unit] =
    val _ = args
    Left(s"experiment '$name' cannot check its options without running")
