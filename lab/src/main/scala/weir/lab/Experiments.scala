package weir.lab

import cats.effect.{ExitCode, IO}

/** The registry behind `./weir lab <name>`: add an experiment by adding it to [[all]]. */
object Experiments:

  val all: Vector[Experiment] = Vector(
    weir.lab.compare.Compare,
    weir.lab.channels.Channels,
    weir.lab.requests.Serve,
    weir.lab.requests.Requests,
    weir.lab.blocking.Blocking,
    weir.lab.trampoline.Trampoline,
    weir.lab.adaptive.AdaptiveLab,
    weir.lab.durable.DurableLab,
    weir.lab.console.ConsoleLab,
    weir.lab.kafka.KafkaLab,
    weir.lab.soak.SoakLab
  )

  def usage: String =
    val width = all.map(_.name.length).maxOption.getOrElse(0)
    val lines = all.map(e => s"  ${e.name.padTo(width, ' ')}  ${e.summary}")
    ("Usage: weir lab <experiment> [options]   (weir lab <experiment> --help for its options)" +:
      "Experiments:" +: lines)
      .mkString("\n")

  /** Dispatches `lab <name> args...`; unknown or missing names are refused with the list of known ones. */
  def run(args: List[String]): IO[ExitCode] =
    args match
      case Nil | ("--help" | "-h" | "help") :: _ =>
        IO.println(usage).as(if args.isEmpty then ExitCode(2) else ExitCode.Success)
      case name :: rest =>
        all.find(_.name == name) match
          case Some(e) => e.run(rest)
          case None =>
            IO.consoleForIO
              .errorln(
                s"Error: unknown experiment '$name' (known: ${all.map(_.name).mkString(", ")})\n$usage"
              )
              .as(ExitCode(2))

  /** Parses `lab <name> args...` as [[run]] would, without running anything: `Left(why)` when it is refused. */
  def check(args: List[String]): Either[String, Unit] =
    args match
      case Nil => Left("an experiment is required")
      case ("--help" | "-h" | "help") :: _ => Right(())
      case name :: rest =>
        all.find(_.name == name) match
          case Some(e) => e.check(rest).left.map(why => s"lab $name: $why")
          case None => Left(s"unknown experiment '$name' (known: ${all.map(_.name).mkString(", ")})")
