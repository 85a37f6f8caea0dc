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
