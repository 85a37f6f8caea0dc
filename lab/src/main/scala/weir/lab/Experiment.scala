package weir.lab

import weir.cli.Command

/**
 * One `./weir lab <name>` experiment: a [[Command]] named `lab <name>`. Each experiment owns its options
 * (parsed with scopt in its own file, under the program name `weir lab <name>`), its table, JSON and chart;
 * [[Experiments.all]] lists them.
 */
trait Experiment extends Command:
  /** The subcommand's name, e.g. `channels`. */
  def label: String

  final def words: List[String] = List("lab", label)
