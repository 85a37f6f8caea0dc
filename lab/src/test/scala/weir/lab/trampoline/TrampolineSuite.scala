package weir.lab.trampoline

import weir.cli.CommandLine
import cats.effect.IO
import munit.CatsEffectSuite
import weir.runtime.WeirRuntime
import weir.cli.CommandLine.Parsed

import java.nio.file.Files
import scala.concurrent.duration.*

/**
 * `./weir lab trampoline`: steps and frames of A(m, n) on hand-made cases and closed forms, every approach's
 * value, stack safety where promised, the overflow report, options and one quick run (structure only).
 */
class TrampolineSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 60.seconds

  test("A(m, n)'s steps and frames, by hand") {
    // A(0, 0): one call
    assertEquals(Ackermann.shape(0, 0), Some(Ackermann.Shape(1, 1L, 1)))
    // A(1, 0) -> A(0, 1): two calls, tail call, one frame
    assertEquals(Ackermann.shape(1, 0), Some(Ackermann.Shape(2, 2L, 1)))
    // A(1, 1): inner A(1, 0) (second frame) -> A(0, 1) = 2; then A(0, 2) = 3: four calls
    assertEquals(Ackermann.shape(1, 1), Some(Ackermann.Shape(3, 4L, 2)))
    // A(2, 1): A(2,1), A(2,0), A(1,1), A(1,0), A(0,1), A(0,2), A(1,3), A(1,2), A(1,1), A(1,0), A(0,1),
    // A(0,2), A(0,3), A(0,4) = 5
    assertEquals(Ackermann.shape(2, 1).map(s => (s.value, s.steps)), Some((5, 14L)))
  }

  test(
    "closed forms: A(1, n) = n + 2 in 2n + 2 steps and n + 1 frames; A(2, n) = 2n + 3; A(3, n) = 2^(n+3) - 3"
  ) {
    for n <- Seq(0, 1, 5, 100, 1000) do
      assertEquals(Ackermann.shape(1, n), Some(Ackermann.Shape(n + 2, 2L * n + 2, n + 1)))
      assertEquals(Ackermann.shape(2, n).map(_.value), Some(2 * n + 3))
    for n <- 0 to 6 do assertEquals(Ackermann.shape(3, n).map(_.value), Some((1 << (n + 3)) - 3))
    assertEquals(Ackermann.shape(2, 1000, maxSteps = 1000L), None)
  }

  test("every approach computes A(m, n) right") {
    WeirRuntime.resource.use { rt =>
      IO.interruptible {
        for
          a <- Approach.all(maxDepth = 8)
          (m, n) <- Seq((0, 0), (0, 7), (1, 0), (1, 9), (2, 0), (2, 5), (3, 0), (3, 3))
        do assertEquals(a.compute(m, n, rt), Ackermann.plain(m, n), s"${a.name} A($m, $n)")
      }
    }
  }

  test("plain recursion overflows a small stack and is reported, not thrown; the IO approaches do not") {
    WeirRuntime.resource.use { rt =>
      IO.interruptible {
        Trampoline.onStack(128) {
          val frames = Trampoline.probeOverflow()
          assert(frames > 10 && frames < 1_000_000, frames)
          // A(1, n) needs n + 1 frames: far more than the probe reached, even if compiled code (smaller
          // frames) runs the plain recursion while the probe was interpreted
          val n = frames * 50
          assertEquals(Trampoline.measure(Approach.Plain, 1, n, n + 2, 1, rt).error, Some("overflow"))
          for a <- Seq(Approach.IoTrampoline, Approach.IoDepth(64), Approach.FutureHop) do
            val cell = Trampoline.measure(a, 1, n, n + 2, 1, rt)
            assertEquals(cell.error, None, a.name)
            assertEquals(cell.runs, 1, a.name)
        }
      }
    }
  }

  private def parse(args: String*) = CommandLine.parse(Trampoline.parser, args, Trampoline.Settings())

  test("options are parsed; --quick keeps the first four n and one run") {
    parse("--m", "3", "--n", "1,2,3,4,5", "--runs", "2", "--stack-kb", "512", "--quick") match
      case Parsed.Ok(s) =>
        assertEquals((s.m, s.points, s.measuredRuns, s.stackKb), (3, Seq(1, 2, 3, 4), 1, 512))
      case other => fail(s"not parsed: $other")
  }

  test("bad options are refused, naming the option and the value") {
    assertEquals(parse("--depth", "3"), Parsed.Bad("Unknown option --depth; Unknown argument '3'"))
    assertEquals(parse("--m", "4"), Parsed.Bad("--m must be in [0, 3], was: 4"))
    assertEquals(parse("--n", "1,x"), Parsed.Bad("Option --n expects a number but was given '1,x'"))
    assertEquals(parse("--n", "3,-1"), Parsed.Bad("--n values must be >= 0, was: -1"))
    assertEquals(parse("--stack-kb", "1"), Parsed.Bad("--stack-kb must be in [16, 65536], was: 1"))
    assertEquals(
      parse("--n", "100000"),
      Parsed.Bad("--n 100000: A(2, 100000) takes more than 20000000 steps")
    )
  }

  test(
    "--quick: every approach at every point, plain recursion's overflow depth reported; JSON and chart written"
  ) {
    val dir = Files.createTempDirectory("weir-trampoline")
    val settings = Trampoline.Settings(
      quick = true,
      json = Some(dir.resolve("t.json")),
      chart = Some(dir.resolve("t.png"))
    )
    Trampoline.execute(settings).flatMap { (points, overflow) =>
      assertEquals(points.map(_.n), Vector(1, 3, 10, 30))
      assertEquals(points.map(_.steps), Vector(14L, 44L, 275L, 2015L))
      points.foreach { p =>
        assertEquals(p.cells.map(_.approach), Vector("plain", "future", "io", "io-cede", "io-depth"))
        // A(2, 30) needs 62 frames: the plain recursion fits in any stack the JVM gives a thread
        p.cells.foreach(c => assert(c.error.isEmpty && c.runs == 1 && c.medianUs > 0, c.toString))
      }
      assert(overflow.frames > 62, overflow.toString)
      IO.blocking {
        val doc =
          io.circe.parser.parse(Files.readString(dir.resolve("t.json"))).fold(e => fail(e.toString), identity)
        assertEquals(doc.hcursor.downField("experiment").as[String], Right("trampoline"))
        assertEquals(doc.hcursor.downField("records").values.map(_.size), Some(4 * 5))
        assertEquals(doc.hcursor.downField("overflow").downField("frames").as[Int], Right(overflow.frames))
        assert(Files.size(dir.resolve("t.png")) > 0)
      }
    }
  }
