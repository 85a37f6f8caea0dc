package weir.lab.kafka

import cats.effect.IO
import io.circe.parser.parse
import munit.CatsEffectSuite

import java.nio.file.Files
import scala.concurrent.duration.*

class KafkaLabSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 6.minutes

  test(
    "a small run with SIGKILLed consumers loses no record, keeps every key's order, explains every repeat"
  ) {
    val settings = KafkaLab.Settings(
      records = 5000,
      sleepRecords = 2000,
      killRecords = 6000,
      partitions = 3,
      keys = 20,
      consumers = 2,
      killEvery = 3.seconds,
      maxKills = 2,
      sleepMillis = 5,
      timeBox = 2.seconds,
      warmup = Duration.Zero,
      rounds = 2
    )
    IO.blocking(Files.createTempFile("kafka-lab", ".json")).flatMap { file =>
      KafkaLab.execute(settings.copy(json = Some(file)))
        .flatMap(r => IO.blocking(Files.readString(file)).map(text => (r, text)))
        .guarantee(IO.blocking(Files.deleteIfExists(file)).void)
    }.map { (r, text) =>
      val a = r.kill.analysis
      assertEquals(a.records, 6000L)
      assertEquals(a.lost, 0L, a)
      assertEquals(a.orderViolations, Vector.empty, a.orderViolations.take(5))
      assertEquals(a.unexplained, Vector.empty, a.unexplained.take(5))
      assertEquals(a.committedEarly, 0L)
      assert(r.kill.kills >= 1, s"the run SIGKILLed no consumer: $r")
      assertEquals(r.throughputs.size, 9) // two no-op rounds of three approaches, one round of the sleep
      assertEquals(r.throughputs.filter(_.handler == KafkaLab.Noop).map(_.round).distinct, Vector(1, 2))
      assert(r.throughputs.forall(t => t.records > 0 && t.seconds > 0), r.throughputs)
      val json = parse(text).fold(e => fail(e.getMessage), identity).hcursor
      val rows = json.downField("throughput").values.getOrElse(fail("no throughput")).toVector
      assertEquals(
        rows.map(_.hcursor.get[String]("approach").toOption.get).toSet,
        Set("weir", "plain", "fs2")
      )
      assertEquals(rows.map(_.hcursor.get[Int]("round").toOption.get).toSet, Set(1, 2))
      assertEquals(json.get[Int]("noop_rounds"), Right(2))
      assert(rows.forall(_.hcursor.get[Double]("per_second").isRight), text)
      val kill = json.downField("kill")
      for field <- List("lost", "order_violations", "duplicates", "duplicates_unexplained", "kills") do
        assert(kill.get[Long](field).isRight, s"kill.$field in $text")
      assertEquals(kill.get[Long]("lost"), Right(0L))
      assertEquals(kill.get[Long]("order_violations"), Right(0L))
      assert(kill.get[Double]("commit_lag_p99_ms").isRight, text)
      assertEquals(json.downField("targets").values.map(_.size), Some(8))
    }
  }

  test("the no-op ratios are the median of the rounds' ratios, each round's approaches against each other") {
    def t(a: Approach, perSecond: Double, round: Int) =
      KafkaLab.Throughput(KafkaLab.Noop, a, perSecond.toLong, 1.0, round)
    // round 2's plain loop ran fast: weir / plain is 1.2, 0.5 and 1.1 in the three rounds
    val rounds = Vector(
      t(Approach.Plain, 1000, 1),
      t(Approach.Weir, 1200, 1),
      t(Approach.Plain, 2000, 2),
      t(Approach.Weir, 1000, 2),
      t(Approach.Plain, 1000, 3),
      t(Approach.Weir, 1100, 3)
    )
    // no kill run here: an analysis of an empty topic
    val none = KillPhase.Outcome(
      KillAnalysis.analyse(Map.empty, Vector.empty, Set.empty, Map.empty, Vector.empty),
      0,
      0,
      0
    )
    val r = KafkaLab.Results(rounds, none)
    assertEqualsDouble(r.ratio(KafkaLab.Noop, Approach.Plain), 1.1, 1e-9)
    assertEqualsDouble(
      KafkaLab.Results(rounds.take(4), none).ratio(KafkaLab.Noop, Approach.Plain),
      0.85,
      1e-9
    )
    assert(r.ratio(KafkaLab.Sleep, Approach.Plain).isNaN, "no round of the sleeping handler")
  }

  test("--rounds must be positive") {
    assert(KafkaLab.check(List("--rounds", "0")).isLeft)
    assert(KafkaLab.check(List("--rounds", "2")).isRight)
  }
