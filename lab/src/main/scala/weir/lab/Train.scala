package weir.lab

import cats.effect.{ExitCode, IO}
import cats.syntax.all.*

/**
 * `./weir train`: short runs of the lab's main paths in one JVM, for the launcher to record that JVM's
 * ahead-of-time cache (JDK 25's `-XX:AOTCacheOutput`, JEPs 483, 514 and 515). The classes these runs load
 * and link, and the profiles of their hot methods, are then mapped from the cache by every later `./weir`
 * JVM instead of being loaded, linked and learned again, which is most of what a cold run pays before its
 * first task. What the runs print is of no interest; the command fails if one of them fails.
 */
object Train:

  /**
   * Each experiment's command line: weir's engine on the real clock, its blocking mode, its HTTP client, and
   * the delay server in this JVM too, since the lab's child JVMs start from the same cache.
   */
  val runs: List[List[String]] = List(
    "compare --quick --clock real --approaches weir --no-live",
    "blocking --quick --approaches io-interruptible,weir-blocking",
    "requests --n 4000 --concurrency 1000 --max-delay 300 --approach weir --server same --no-progress"
  ).map(_.split(' ').toList)

  def run: IO[ExitCode] =
    runs.traverse(Experiments.run).map(_.find(_ != ExitCode.Success).getOrElse(ExitCode.Success))

  /** Checks the runs' command lines as the experiments' parsers would, without running them. */
  def check: Either[String, Unit] = runs.traverse_(Experiments.check)
