package weir.lab
package compare

import cats.effect.IO
import io.circe.Json
import munit.CatsEffectSuite
import weir.lab.compare.approaches.Clock
import weir.lab.compare.report.{ResultsTable, Rows}
import weir.lab.compare.scenarios.{BoundedIdeal, Plan}

import java.nio.file.Files
import scala.concurrent.duration.*

/** `./weir lab compare` end to end: options parsed, a quick virtual run, the JSON written and its shape. */
class CompareCliSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 60.seconds

  test("compare's options are parsed into settings") {
    val parsed = Compare.parse(List(
      "--clock",
      "virtual",
      "--seed",
      "42",
      "--runs",
      "3",
      "--quick",
      "--approaches",
      "weir,batch",
      "--scenarios",
      "balanced",
      "--producers",
      "3"
    ))
    parsed match
      case Right(Some(s)) =>
        assertEquals(s.clock, Clock.Virtual)
        assertEquals((s.seed, s.runs), (42L, 3))
        assertEquals(s.approaches.map(_.name), Vector("weir", "batch"))
        assertEquals(s.workloads.map(w => (w.name, w.tasks, w.producers)), Vector(("balanced", 100, 3)))
      case other => fail(s"not parsed: $other")
  }

  test("--quick runs on the virtual clock unless told otherwise") {
    assertEquals(Compare.settings(Compare.Options(quick = true)).map(_.clock), Right(Clock.Virtual))
    assertEquals(
      Compare.settings(Compare.Options(quick = true, clock = Some(Clock.Real))).map(s =>
        (s.clock, s.timeScale)
      ),
      Right((Clock.Real, 0.1))
    )
    assertEquals(
      Compare.settings(Compare.Options()).map(s => (s.clock, s.timeScale)),
      Right((Clock.Real, 1.0))
    )
  }

  test("bad compare options are refused with the bad value") {
    assertEquals(
      Compare.settings(Compare.Options(approaches = Seq("nope"))).left.map(_.takeWhile(_ != '(')),
      Left("--approaches: unknown approach 'nope' ")
    )
    assertEquals(Compare.parse(List("--runs", "0")), Left("--runs must be > 0, was: 0"))
    assertEquals(
      Compare.parse(List("--clock", "sundial")),
      Left("--clock must be real or virtual, was: sundial")
    )
    assert(Compare.check(List("--nosuch")).isLeft)
    assertEquals(
      Compare.parse(List("--quick", "--ordered-window", "5")),
      Left("--ordered-window must be >= the slots (10), was: 5")
    )
    assertEquals(
      Compare.parse(List("--quick", "--ordered-window", "20")).map(_.flatMap(_.orderedWindow)),
      Right(Some(20))
    )
  }

  test("--json writes one record per (shape, approach, run) with the issue's fields and the environment") {
    val dir = Files.createTempDirectory("weir-compare")
    val json = dir.resolve("out.json")
    val settings = Compare.settings(Compare.Options(
      quick = true,
      runs = 2,
      approaches = Seq("batch", "weir"),
      json = Some(json),
      report = Some(dir.resolve("report")),
      live = false
    ))
      .fold(e => fail(e), identity)
    Compare.execute(settings).flatMap { measurements =>
      IO.blocking(Files.readString(json)).map { text =>
        val doc = io.circe.parser.parse(text).fold(e => fail(e.toString), identity)
        val env = doc.hcursor.downField("environment")
        assertEquals(env.get[String]("clock"), Right("virtual"))
        assertEquals(env.get[Long]("seed"), Right(0L))
        assert(env.get[Int]("cores").exists(_ > 0))
        assert(env.get[String]("jdk").isRight)
        val records = doc.hcursor.downField("records").as[Vector[Json]].fold(e => fail(e.toString), identity)
        assertEquals(records.size, 3 * 2 * 2)
        assertEquals(measurements.size, records.size)
        records.foreach { r =>
          val c = r.hcursor
          List("scenario", "approach", "status").foreach(f => assert(c.get[String](f).isRight, s"$f in $r"))
          assert(c.get[Int]("run").isRight)
          List("makespan_ms", "ideal_ms", "ratio").foreach(f => assert(c.get[Double](f).isRight, s"$f in $r"))
          assertEqualsDouble(
            c.get[Double]("ratio").toOption.get,
            c.get[Double]("makespan_ms").toOption.get / c.get[Double]("ideal_ms").toOption.get,
            1e-9
          )
        }
        assertEquals(
          records.map(_.hcursor.get[String]("scenario").toOption.get).distinct,
          Vector("slow-producer", "balanced", "slow-consumer")
        )
        assert(Files.exists(dir.resolve("report/ratios.png")))
        assert(Files.exists(dir.resolve("report/timeline-balanced-weir.png")))
        // index.html is the self-contained page: the same charts, embedded rather than linked
        val index = Files.readString(dir.resolve("report/index.html"))
        assert(index.contains(
          """<figure class="chart" id="chart-timeline-balanced-weir"><img src="data:image/png;base64,"""
        ))
        assert(!index.contains(".png\""), "no chart is linked from the page")
      }
    }
  }

  test(
    "the bounded ideal, in the JSON and the table, where the buffer is smaller than a burst and only there"
  ) {
    val json = Files.createTempDirectory("weir-compare").resolve("out.json")
    def run(producers: Option[Int]) =
      val settings = Compare.settings(Compare.Options(
        quick = true,
        scenarios = Seq("slow-consumer"),
        approaches = Seq("stream", "weir"),
        producers = producers,
        json = Some(json),
        live = false
      )).fold(e => fail(e), identity)
      Compare.execute(settings).flatMap { ms =>
        IO.blocking(Files.readString(json)).map { text =>
          val doc = io.circe.parser.parse(text).fold(e => fail(e.toString), identity)
          val records =
            doc.hcursor.downField("records").as[Vector[Json]].fold(e => fail(e.toString), identity)
          (settings.workloads.head, ms, records.map(_.hcursor))
        }
      }
    // three producers hand over 3 batches of 10 at once, into a buffer of 20
    run(Some(3)).flatMap { (w, ms, records) =>
      val plan = Plan.draw(w, seed = 0L, run = 0)
      assertEquals(records.map(_.get[Int]("producers").toOption.get), Vector(1, 3))
      records.foreach { c =>
        val p = c.get[Int]("producers").toOption.get
        assertEquals(c.get[Double]("bounded_ideal_ms"), Right(BoundedIdeal.makespan(plan, p, 20).toDouble))
        assertEqualsDouble(
          c.get[Double]("bounded_ratio").toOption.get,
          c.get[Double]("makespan_ms").toOption.get / c.get[Double]("bounded_ideal_ms").toOption.get,
          1e-9
        )
        assert(c.get[Double]("own_order_ratio").exists(_ >= 1.0), c.focus.toString)
      }
      val table = ResultsTable.shape(Rows.of(ms), w, runs = 1)
      assertEquals(table.head.takeRight(2), Vector("ratio to own order", "ratio to bounded ideal"))
      assertEquals(
        table.map(_.head).filter(_.contains("ideal")),
        Vector(
          "ideal (1 producer)",
          "ideal (3 producers)",
          "bounded ideal (1 producer)",
          "bounded ideal (3 producers)"
        )
      )
      run(None).map { (w, ms, records) =>
        records.foreach { c =>
          assert(c.downField("bounded_ideal_ms").focus.exists(_.isNull), c.focus.toString)
          assert(c.downField("bounded_ratio").focus.exists(_.isNull), c.focus.toString)
        }
        val table = ResultsTable.shape(Rows.of(ms), w, runs = 1)
        assertEquals(table.head.last, "ratio to own order")
        assert(!table.exists(_.head.startsWith("bounded")), table.toString)
      }
    }
  }

  test("--parallel runs the load shapes side by side: the same makespans, in the same order, without peaks") {
    assertEquals(
      Compare.parse(List("--parallel")).map(_.map(_.parallel)),
      Right(Some(true))
    )
    val base =
      Compare.settings(Compare.Options(
        quick = true,
        approaches = Seq("blocking-queue", "stream", "weir"),
        live = false
      ))
        .fold(e => fail(e), identity)
    for
      sequential <- Compare.measureAll(base, _ => IO.unit)
      parallel <- Compare.measureAll(base.copy(parallel = true), _ => IO.unit)
    yield
      def key(ms: Vector[Measurement]) = ms.map(m => (m.scenario, m.approach, m.run, m.makespanMs, m.status))
      assertEquals(key(parallel), key(sequential))
      assert(sequential.forall(m => m.peakThreads.isDefined && m.peakHeapMiB.isDefined), sequential.toString)
      assert(parallel.forall(m => m.peakThreads.isEmpty && m.peakHeapMiB.isEmpty), parallel.toString)
  }
