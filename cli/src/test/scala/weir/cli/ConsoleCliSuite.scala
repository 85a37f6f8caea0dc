package weir.cli

import cats.effect.ExitCode
import munit.CatsEffectSuite
import scopt.OParser
import weir.cli.CommandLine.Parsed
import weir.console.ReaderView

import scala.concurrent.duration.*

/** `./weir console`'s options: what they set, and bad values refused before anything is served. */
class ConsoleCliSuite extends CatsEffectSuite:

  private def parse(args: String*): Option[ConsoleCli.Options] =
    OParser.parse(ConsoleCli.parser, args, ConsoleCli.Options())

  test("--counts-every sets how often the overview's counts are read, a duration; 2s by default") {
    assertEquals(parse().map(_.countsEvery), Some(2.seconds))
    assertEquals(parse("--counts-every", "500ms").map(_.countsEvery), Some(500.millis))
    assertEquals(parse("--counts-every", "0.5s").map(_.countsEvery), Some(500.millis))
    assertEquals(parse("--counts-every", "0s").map(_.countsEvery), Some(Duration.Zero))
  }

  test("the session's options: lifetime (8h by default), Secure cookie, trusted proxy, what readers see") {
    val defaults = parse().get
    assertEquals(
      (defaults.sessionLifetime, defaults.secureCookie, defaults.trustProxy, defaults.readers),
      (8.hours, false, false, ReaderView.Full)
    )
    val set =
      parse("--session-lifetime", "30m", "--secure-cookie", "--trust-proxy", "--readers", "summary").get
    assertEquals(
      (set.sessionLifetime, set.secureCookie, set.trustProxy, set.readers),
      (30.minutes, true, true, ReaderView.Summary)
    )
    assertEquals(parse("--session-lifetime", "720h").map(_.sessionLifetime), Some(30.days))
    assertEquals(parse("--session-lifetime", "1m").map(_.sessionLifetime), Some(1.minute))
  }

  test("a bad value is refused naming it, with exit code 2") {
    def error(args: String*) = CommandLine.parse(ConsoleCli.parser, args, ConsoleCli.Options()) match
      case Parsed.Bad(e) => e
      case other => fail(s"not refused: $other")
    assert(
      error("--counts-every", "NaN").contains("Option --counts-every failed when given 'NaN'"),
      error("--counts-every", "NaN")
    )
    assert(error("--counts-every", "2").contains("Option --counts-every failed when given '2'"))
    assert(error("--counts-every", "-1s").contains("given '-1s'"))
    assert(error("--counts-every", "61m").contains("--counts-every must be at most 1h, was: 61m"))
    assert(error("--session-lifetime", "59s").contains("--session-lifetime must be in 1m..720h, was: 59s"))
    assert(error("--session-lifetime", "721h").contains("--session-lifetime must be in 1m..720h, was: 721h"))
    assert(error("--session-lifetime", "8").contains("Option --session-lifetime failed when given '8'"))
    assert(error("--readers", "none").contains("--readers must be full or summary, was: 'none'"))
    assert(error("--port", "70000").contains("--port must be in 0..65535, was: 70000"))
    Main.run(List("console", "--counts-every", "2")).map(code => assertEquals(code, ExitCode(2)))
  }
