package weir.lab.blocking

import cats.effect.IO
import munit.CatsEffectSuite
import weir.cli.CommandLine
import weir.cli.CommandLine.Parsed

import java.nio.file.Files
import scala.concurrent.duration.*

/**
 * `./weir lab blocking`: the ideal and the pool bound on hand-made cases, options and their errors, and
 * one quick real run checking structure and the pools' fixed limits (never a speed).
 */
class BlockingSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 60.seconds

  test("ideal: one task's duration when nothing starves; 0 without tasks") {
    assertEquals(Ideal.makespan(100, 3000L), 3000L)
    assertEquals(Ideal.makespan(1, 7L), 7L)
    assertEquals(Ideal.makespan(0, 3000L), 0L)
  }

  test("a pool of k threads needs ⌈tasks / k⌉ durations") {
    assertEquals(Ideal.withThreads(100, 3000L, 2), 150000L)
    assertEquals(Ideal.withThreads(101, 10L, 2), 510L)
    assertEquals(Ideal.withThreads(100, 10L, 100), 10L)
    assertEquals(Ideal.withThreads(5, 10L, 64), 10L)
    assertEquals(Ideal.withThreads(0, 10L, 2), 0L)
  }

  test("bad ideal arguments are refused with the value") {
    val _ = interceptMessage[IllegalArgumentException]("requirement failed: threads must be > 0, was: 0")(
      Ideal.withThreads(1, 1L, 0)
    )
    val _ = interceptMessage[IllegalArgumentException]("requirement failed: duration must be >= 0, was: -5")(
      Ideal.makespan(1, -5L)
    )
  }

  private def parse(args: String*) = CommandLine.parse(Blocking.parser, args, Blocking.Settings())

  test("options are parsed; --quick makes 30 ms tasks") {
    parse(
      "--tasks",
      "10",
      "--block-time",
      "200ms",
      "--time-scale",
      "0.5",
      "--approaches",
      "weir-blocking,io-blocking"
    ) match
      case Parsed.Ok(s) =>
        assertEquals(
          (s.tasks, s.duration, Blocking.selected(s).map(_.name)),
          (10, 100.millis, Vector("io-blocking", "weir-blocking"))
        )
      case other => fail(s"not parsed: $other")
    parse("--quick") match
      case Parsed.Ok(s) => assertEquals((s.duration, s.warmupRuns), (30.millis, 0))
      case other => fail(s"not parsed: $other")
    parse("--warmup-runs", "3") match
      case Parsed.Ok(s) => assertEquals(s.warmupRuns, 3)
      case other => fail(s"not parsed: $other")
  }

  test("bad options are refused, naming the option and the value") {
    assertEquals(parse("--sleep", "3"), Parsed.Bad("Unknown option --sleep; Unknown argument '3'"))
    assertEquals(
      parse("--block-time", "3000"),
      Parsed.Bad(
        "Option --block-time failed when given '3000'. Expected a number and a unit, such as 250ms, 5s, 2m or 1h."
      )
    )
    assertEquals(parse("--tasks", "-1"), Parsed.Bad("--tasks must be > 0, was: -1"))
    assertEquals(parse("--time-scale", "0"), Parsed.Bad("--time-scale must be in (0, 10], was: 0.0"))
    assertEquals(parse("--warmup-runs", "-1"), Parsed.Bad("--warmup-runs must be >= 0, was: -1"))
    assertEquals(
      parse("--warmup-runs", "two"),
      Parsed.Bad("Option --warmup-runs expects a number but was given 'two'")
    )
    parse("--approaches", "future-global,green-threads") match
      case Parsed.Bad(e) =>
        assert(e.startsWith("--approaches: unknown approach 'green-threads' (known: future-global, "), e)
      case other => fail(s"accepted: $other")
  }

  test("--quick: every approach runs every task once; fixed pools never block more than their threads") {
    val dir = Files.createTempDirectory("weir-blocking")
    val cores = Runtime.getRuntime.availableProcessors
    val settings =
      Blocking.Settings(quick = true, json = Some(dir.resolve("b.json")), chart = Some(dir.resolve("b.png")))
    Blocking.execute(settings).flatMap { records =>
      assertEquals(records.map(_.approach), Approach.all.map(_.name))
      records.foreach { r =>
        assertEquals(r.error, None, r.approach)
        assertEquals(r.completed, 100, r.approach)
        assert(r.elapsedMs > 0, r.toString)
        assertEquals(r.idealMs, 30.0)
      }
      val byName = records.map(r => r.approach -> r).toMap
      // the unmarked global pool runs one task per core at most, the fixed pool two (with or without the marker)
      assert(byName("future-global").peakInFlight <= cores, byName("future-global").toString)
      assertEquals(byName("future-fixed2-blocking").peakInFlight, 2)
      assertEquals(byName("future-global").boundMs, Ideal.withThreads(100, 30L, cores).toDouble)
      assertEquals(byName("future-fixed2-blocking").boundMs, 1500.0)
      IO.blocking {
        val doc =
          io.circe.parser.parse(Files.readString(dir.resolve("b.json"))).fold(e => fail(e.toString), identity)
        assertEquals(doc.hcursor.downField("experiment").as[String], Right("blocking"))
        assertEquals(doc.hcursor.downField("records").values.map(_.size), Some(records.size))
        assert(Files.size(dir.resolve("b.png")) > 0)
      }
    }
  }

  test(
    "--warmup-runs: each approach runs again after its first run; both times kept, the warm one measured"
  ) {
    val dir = Files.createTempDirectory("weir-blocking-warm")
    val settings = Blocking.Settings(
      quick = true,
      approaches = Seq("io-interruptible", "weir-blocking"),
      warmupRuns = 1,
      json = Some(dir.resolve("w.json"))
    )
    Blocking.execute(settings).flatMap { records =>
      assertEquals(records.map(_.approach), Vector("io-interruptible", "weir-blocking"))
      records.foreach { r =>
        assertEquals(r.error, None, r.approach)
        assertEquals(r.completed, 100, r.approach)
        assert(r.firstRunMs.exists(_ > 0) && r.elapsedMs > 0, r.toString)
      }
      assert(Blocking.table(records).contains("first run ms"), Blocking.table(records))
      IO.blocking {
        val doc =
          io.circe.parser.parse(Files.readString(dir.resolve("w.json"))).fold(e => fail(e.toString), identity)
        assertEquals(doc.hcursor.downField("settings").downField("warmup_runs").as[Int], Right(1))
        val firsts = doc.hcursor.downField("records").values.toVector.flatten
          .map(_.hcursor.downField("first_run_ms").as[Double].toOption)
        assertEquals(firsts, records.map(_.firstRunMs))
      }
    }
  }

  test("without warm-up runs there is no first-run column and the JSON says null") {
    val records = Vector(
      Blocking.Record("weir-blocking", None, 320.0, None, 300.0, 300.0, 10, 110, 100, 100, None)
    )
    val table = Blocking.table(records)
    assert(!table.contains("first run") && table.contains("elapsed ms"), table)
    val json = Blocking.json(Blocking.Settings(), records)
    assertEquals(
      json.hcursor.downField("records").downN(0).downField("first_run_ms").focus,
      Some(io.circe.Json.Null)
    )
  }

  private def record(ms: Double, error: Option[String] = None) =
    Blocking.Record("weir-blocking", None, ms, None, 300.0, 300.0, 10, 110, 100, 100, error)

  /** `once` giving `records` in turn, and how many times it ran. */
  private def scripted(records: Blocking.Record*): IO[(IO[Blocking.Record], IO[Int])] =
    IO.ref(records.toList).map(left =>
      (left.modify(rs => (rs.drop(1), rs.head)), left.get.map(rs => records.size - rs.size))
    )

  test("after warm-up runs: the last run is measured and the first one kept") {
    scripted(record(500.0), record(320.0), record(310.0)).flatMap { (once, ran) =>
      Blocking.afterWarmUp(2, once).flatMap { r =>
        assertEquals((r.elapsedMs, r.firstRunMs, r.error), (310.0, Some(500.0), None))
        ran.assertEquals(3)
      }
    }
  }

  test("a warm-up run that fails is the record, named, and nothing runs after it") {
    scripted(record(500.0), record(Double.NaN, Some("boom")), record(310.0)).flatMap { (once, ran) =>
      Blocking.afterWarmUp(2, once).flatMap { r =>
        assertEquals(r.error, Some("warm-up run 2: boom"))
        assertEquals(r.firstRunMs, Some(500.0))
        ran.assertEquals(2)
      }
    }
  }

  test("without warm-up runs one run is measured and no first run is kept") {
    scripted(record(400.0), record(1.0)).flatMap { (once, ran) =>
      Blocking.afterWarmUp(0, once).flatMap { r =>
        assertEquals((r.elapsedMs, r.firstRunMs), (400.0, None))
        ran.assertEquals(1)
      }
    }
  }
