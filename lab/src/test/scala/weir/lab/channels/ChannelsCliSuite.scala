package weir.lab.channels

import cats.effect.IO
import munit.CatsEffectSuite
import weir.cli.CommandLine
import weir.cli.CommandLine.Parsed

import java.nio.file.Files
import scala.concurrent.duration.*

/** `./weir lab channels`: options, errors naming the value, and one quick real run (structure, not speed). */
class ChannelsCliSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 60.seconds

  private def parse(args: String*) = CommandLine.parse(Channels.parser, args, Channels.Settings())

  test("options are parsed") {
    parse(
      "--tasks",
      "20",
      "--seed",
      "5",
      "--time-scale",
      "0.5",
      "--rate",
      "50",
      "--burst",
      "2",
      "--runs",
      "4"
    ) match
      case Parsed.Ok(s) =>
        assertEquals((s.tasks, s.seed, s.scale, s.rate, s.burst, s.measuredRuns), (20, 5L, 0.5, 50, 2, 4))
      case other => fail(s"not parsed: $other")
    parse("--quick") match
      case Parsed.Ok(s) => assertEquals((s.scale, s.measuredRuns), (0.2, 1))
      case other => fail(s"not parsed: $other")
  }

  test("bad options are refused, naming the option and the value") {
    assertEquals(parse("--frob"), Parsed.Bad("Unknown option --frob"))
    assertEquals(parse("--tasks", "many"), Parsed.Bad("Option --tasks expects a number but was given 'many'"))
    assertEquals(parse("--tasks", "0"), Parsed.Bad("--tasks must be > 0, was: 0"))
    assertEquals(parse("--time-scale", "NaN"), Parsed.Bad("--time-scale must be in (0, 10], was: NaN"))
    assertEquals(parse("--rate", "-3"), Parsed.Bad("--rate must be > 0, was: -3"))
    assertEquals(
      parse("--min-delay", "60ms"),
      Parsed.Bad("--max-delay must be longer than --min-delay (60ms), was: 50ms")
    )
    assertEquals(
      parse("--min-delay", "60"),
      Parsed.Bad(
        "Option --min-delay failed when given '60'. Expected a number and a unit, such as 250ms, 5s, 2m or 1h."
      )
    )
    assertEquals(
      parse("--service-time", "0.5ms"),
      Parsed.Bad("--service-time must be a whole number of milliseconds, was: 0.5ms")
    )
    assert(parse("--help") match { case Parsed.Help(_) => true; case _ => false })
  }

  test("an unknown option exits with code 2") {
    Channels.run(List("--tasks", "x")).map(code => assertEquals(code.code, 2))
  }

  test("--quick: every approach runs every task once within its limit; JSON and both charts are written") {
    val dir = Files.createTempDirectory("weir-channels")
    val settings =
      Channels.Settings(quick = true, json = Some(dir.resolve("c.json")), chart = Some(dir.resolve("c.png")))
    Channels.execute(settings).flatMap { (records, throttled) =>
      assertEquals(records.map(_.approach), Approach.all(Runtime.getRuntime.availableProcessors).map(_.name))
      records.foreach { r =>
        assertEquals(r.error, None, r.approach)
        assertEquals(r.completed, 100, r.approach)
        assert(r.peakInFlight <= r.limit.getOrElse(100), s"${r.approach}: ${r.peakInFlight} in flight")
        assert(r.elapsedMs > 0 && r.idealMs > 0 && r.minMs <= r.elapsedMs, r.toString)
      }
      assertEquals(
        throttled.map(t => (t.shape, t.completed)),
        Vector(("one-stage", 100), ("two-stages", 100))
      )
      IO.blocking {
        val doc =
          io.circe.parser.parse(Files.readString(dir.resolve("c.json"))).fold(e => fail(e.toString), identity)
        val c = doc.hcursor
        assertEquals(c.downField("experiment").as[String], Right("channels"))
        assertEquals(c.downField("records").values.map(_.size), Some(records.size))
        assertEquals(c.downField("throttled").values.map(_.size), Some(2))
        assertEquals(c.downField("records").downN(0).downField("status").as[String], Right("ok"))
        assert(Files.size(dir.resolve("c.png")) > 0)
        assert(Files.size(dir.resolve("c-throttled.png")) > 0)
      }
    }
  }
