package weir.cli

import cats.effect.{ExitCode, IO}

/**
 * A registry of `./weir` commands and how a command line finds its command: the longest list of words it
 * starts with. The first words of several commands (`durable`, `lab`) name a group: alone or with `--help`
 * they list the group's commands. The launcher's jars each run one registry; the checks over every
 * command iterate the same one.
 */
final case class Commands(all: Vector[Command]):

  /** Runs the command `args` names, or prints the list of commands: exit 0 for `--help`, else 2. */
  def run(args: List[String]): IO[ExitCode] =
    find(args) match
      case Some(c) => c.run(args.drop(c.words.size))
      case None =>
        val (group, rest) = groupOf(args)
        val listing = usage(group)
        rest match
          case Nil if group.nonEmpty =>
            CommandLine.refuse(s"a command is required after '${group.mkString(" ")}'", listing)
          case Nil => CommandLine.refuse("a command is required", listing)
          case ("--help" | "-h" | "help") :: _ => IO.println(listing).as(ExitCode.Success)
          case _ => CommandLine.refuse(unknown(args), listing)

  /** Parses `args` as [[run]] would, without running or printing anything: `Left(why)` when refused. */
  def check(args: List[String]): Either[String, Unit] =
    find(args) match
      case Some(c) => c.check(args.drop(c.words.size)).left.map(why => s"${c.name}: $why")
      case None =>
        groupOf(args)._2 match
          case ("--help" | "-h" | "help") :: _ => Right(())
          case Nil => Left("a command is required")
          case _ => Left(unknown(args))

  /** The commands whose words start with `group` (all for `Nil`), one line each. */
  def usage(group: List[String]): String =
    val listed = all.filter(_.words.startsWith(group))
    val width = listed.map(_.name.length).maxOption.getOrElse(0)
    val title = if group.isEmpty then "weir" else s"weir ${group.mkString(" ")}"
    (s"Usage: $title <command> [options]   (every command takes --help)" +: "Commands:" +:
      listed.map(c => s"  ${c.name.padTo(width, ' ')}  ${c.summary}")).mkString("\n")

  private def find(args: List[String]): Option[Command] =
    all.filter(c => args.startsWith(c.words)).maxByOption(_.words.size)

  /** The longest start of `args` that is a group (the first words of some command), and what follows. */
  private def groupOf(args: List[String]): (List[String], List[String]) =
    val n = (0 to args.size).filter(i =>
      all.exists(c => c.words.size > i && c.words.startsWith(args.take(i)))
    ).maxOption.getOrElse(0)
    (args.take(n), args.drop(n))

  private def unknown(args: List[String]): String =
    val (group, rest) = groupOf(args)
    val known =
      all.flatMap(c => Option.when(c.words.startsWith(group))(c.words.drop(group.size)).flatMap(_.headOption))
        .distinct
    s"unknown command '${(group :+ rest.head).mkString(" ")}' (known after '${("weir" :: group).mkString(" ")}': ${known.mkString(", ")})"
