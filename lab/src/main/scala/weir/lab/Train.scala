package weir.lab

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*
import scopt.OParser
import weir.cli.Command

/**
 * `./weir train`: short runs of the lab's main paths in one JVM, for the launcher to record that JVM's
 * ahead-of-time cache (JDK 25's `-XX:AOTCacheOutput`, JEPs 483, 514 and 515). The classes these runs load
 * and link, and the profiles of their hot methods, are then mapped from the cache by every later `./weir`
 * JVM instead of being loaded, linked and learned again, which is most of what a cold run pays before its
 * first task. What the runs print is of no interest; the command fails if one of them fails.
 */
object Train extends Command.Parsed[Unit]:

  val words: List[String] = List("train")
  val summary: String = "short runs for the launcher's ahead-of-time cache of the lab's jar (JDK 25)"
  val defaults: Unit = ()

  val parser: OParser[Unit, Unit] =
    val builder = OParser.builder[Unit]
    import builder.*
    OParser.sequence(
      programName("weir train"),
      head(s"weir train — $summary"),
      help("help").text("print this help")
    )

  /**
   * Each experiment's command line after `lab`: weir's engine on the real clock, its blocking mode, its HTTP
   * client, and the delay server in this JVM too, since the lab's child JVMs start from the same cache.
   */
  val runs: List[List[String]] = List(
    "compare --quick --clock real --approaches weir --no-live",
    "blocking --quick --approaches io-interruptible,weir-blocking",
    "requests --tasks 4000 --limit 1000 --max-delay 300ms --approaches weir --server same --no-progress"
  ).map(_.split(' ').toList)

  def execute(options: Unit): IO[ExitCode] =
    runs.traverse(r => Main.run("lab" :: r)).map(_.find(_ != ExitCode.Success).getOrElse(ExitCode.Success))

  /** Checks the runs' command lines as the experiments' parsers would, without running them. */
  def checkRuns: Either[String, Unit] = runs.traverse_(r => Main.check("lab" :: r))
