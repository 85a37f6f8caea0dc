package weir.lab.adaptive

import cats.effect.IO
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import io.circe.parser
import munit.CatsEffectSuite

import java.nio.file.Files
import scala.concurrent.duration.*

/**
 * `./weir lab adaptive --quick` end to end on the virtual clock (exact, repeatable): the targets for
 * the default adaptive limit, what the fixed limits show, the JSON and the chart; and the options.
 */
class AdaptiveLabSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 180.seconds

  private def settings(args: String*): AdaptiveLab.Settings =
    AdaptiveLab.parse(args.toList).fold(e => fail(s"not parsed: $e"), identity)

  test("--quick: the gradient limit, never told K, meets the targets; fixed limits show the trade-off") {
    val dir = Files.createTempDirectory("weir-adaptive")
    val json = dir.resolve("adaptive.json")
    val chart = dir.resolve("adaptive.png")
    val s = settings("--quick", "--json", json.toString, "--chart", chart.toString)
    AdaptiveLab.execute(s).map { outcome =>
      val byName = outcome.results.map(r => r.name -> r).toMap
      val best = outcome.best.get
      val gradient = outcome.verdicts("adaptive gradient")
      assert(gradient.throughputRatio >= 0.90, gradient)
      assert(gradient.p99Ratio <= 2.0, gradient)
      assertEquals(gradient.settled.size, 3) // K = 20, then 10 from 8 s, then 20 from 14 s
      assert(gradient.settled.forall(_.exists(_ <= 1.second)), gradient)
      assert(gradient.ok)
      // well below K wastes capacity; well above it gets no more done, only errors and latency
      assert(byName("fixed 5").throughput < 0.5 * best.throughput)
      assert(byName("fixed 80").errors > 1000L && byName("adaptive gradient").errors < 100L)
      assert(byName("fixed 80").p99.toNanos >= 1.99 * s.model.base.toNanos) // the cap: 2K served at once
      assert(Files.size(chart) > 10000L)
      val doc = parser.parse(Files.readString(json)).fold(throw _, identity)
      val results = doc.hcursor.downField("results").values.get.toVector
      assertEquals(
        results.flatMap(_.hcursor.get[String]("name").toOption),
        Vector("fixed 5", "fixed 20", "fixed 80", "adaptive gradient", "adaptive aimd")
      )
      val series = results(3).hcursor.downField("series").values.get.toVector
      assertEquals(series.size, 200) // every 100 ms for 20 s
      assertEquals(series.head.hcursor.keys.get.toSet, Set("t_ms", "limit", "in_flight", "capacity"))
      assertEquals(doc.hcursor.downField("targets").downArray.get[String]("name"), Right("adaptive aimd"))
    }
  }

  test("options: capacity changes, hard caps, fixed limits and algorithms") {
    val s = settings(
      "--capacity",
      "50",
      "--capacity-change",
      "20s:25",
      "--capacity-change",
      "5s:60",
      "--latency",
      "5ms",
      "--hard-cap",
      "120",
      "--fixed",
      "10",
      "--algorithm",
      "aimd",
      "--duration",
      "40s"
    )
    assertEquals(s.model.changes, Vector(5.seconds -> 60, 20.seconds -> 25))
    assertEquals(
      (s.model.capacity, s.model.base, s.model.hardCap),
      (50, 5.millis, Upstream.HardCap.Absolute(120))
    )
    assertEquals(
      (s.fixed, s.algorithms, s.duration, s.clock),
      (Vector(10), Vector("aimd"), 40.seconds, AdaptiveLab.Clock.Real)
    )
    assertEquals(s.model.capacityAt(4.seconds), 50)
    assertEquals(s.model.capacityAt(5.seconds), 60)
    assertEquals(s.model.capacityAt(30.seconds), 25)
    assertEquals(settings().fixed, Vector(12, 50, 200))
    assertEquals((settings().tolerance, settings("--tolerance", "1.2").tolerance), (1.0, 1.2))
    assertEquals(settings("--hard-cap", "1.5x").model.hardCap.of(50), 75)
  }

  test("bad options are refused, naming the value") {
    def refused(args: String*) = assert(AdaptiveLab.parse(args.toList).isLeft, args)
    refused("--capacity", "0")
    refused("--capacity-change", "20s")
    refused("--capacity-change", "soon:25")
    refused("--capacity-change", "20s:-1")
    refused("--hard-cap", "0.5x")
    refused("--hard-cap", "many")
    refused("--latency", "0ms")
    refused("--algorithm", "vegas")
    refused("--fixed", "-3")
    refused("--tolerance", "0.9")
    refused("--no-such-option")
    assertEquals(
      Upstream.parseChange("20s"),
      Left("--capacity-change must be TIME:K like 20s:25 (K > 0), was: 20s")
    )
    assertEquals(
      Upstream.HardCap.parse("0.5x"),
      Left("--hard-cap: a multiple must be a number >= 1 followed by x, was: 0.5x")
    )
    assertEquals(AdaptiveLab.parse(List("--help")), Left(None))
  }

  test(
    "the upstream: within K a request takes the base latency, beyond it in proportion, beyond the cap it fails"
  ) {
    val model = Upstream.Model(
      capacity = 10,
      changes = Vector.empty,
      base = 100.millis,
      hardCap = Upstream.HardCap.Times(2.0),
      errorLatency = 5.millis
    )
    assertEquals(model.phases(10.seconds), Vector((Duration.Zero, 10.seconds, 10)))
    val program = Upstream(model).flatMap { up =>
      (1 to 25).toVector.parTraverse(_ => up.call.attempt.flatMap(r => IO.monotonic.map(t => (t, r.isLeft))))
    }
    TestControl.executeEmbed(program).map { ends =>
      // 20 served (the first 10 in 100 ms, the n-th beyond in n × 10 ms), 5 refused after 5 ms
      val expected = Vector.fill(5)((5.millis, true)) ++ Vector.fill(10)((100.millis, false)) ++
        (11 to 20).map(n => (n * 10).millis -> false)
      assertEquals(ends.sortBy(_._1), expected)
    }
  }
