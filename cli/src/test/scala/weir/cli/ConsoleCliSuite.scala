package weir.cli

import cats.effect.ExitCode
import munit.CatsEffectSuite
import scopt.OParser
import weir.cli.CommandLine.Parsed

import scala.concurrent.duration.*

/** `./weir console`'s options: what they set, and bad values refused before anything is served. */
class ConsoleCliSuite extends CatsEffectSuite:

  private def parse(args: String*): Option[ConsoleCli.Options] =
    OParser.parse(ConsoleCli.parser, args, ConsoleCli.Options())

  test("--counts-every sets how often the overview's counts are read, in seconds; 2 by default") {
    assertEquals(parse().map(_.countsEvery), Some(2.seconds))
    assertEquals(parse("--counts-every", "0.5").map(_.countsEvery), Some(500.millis))
    assertEquals(parse("--counts-every", "0").map(_.countsEvery), Some(Duration.Zero))
  }

  test("a bad value is refused naming it, with exit code 2") {
    def error(args: String*) = CommandLine.parse(ConsoleCli.parser, args, ConsoleCli.Options()) match
      case Parsed.Bad(e) => e
      case other => fail(s"not refused: $other")
    assert(error("--counts-every", "NaN").contains("--counts-every must be in 0..3600 seconds, was: NaN"))
    assert(error("--counts-every", "-1").contains("was: -1.0"))
    assert(error("--counts-every", "3601").contains("was: 3601.0"))
    assert(error("--port", "70000").contains("--port must be in 0..65535, was: 70000"))
    ConsoleCli.run(List("--counts-every", "NaN")).map(code => assertEquals(code, ExitCode(2)))
  }
