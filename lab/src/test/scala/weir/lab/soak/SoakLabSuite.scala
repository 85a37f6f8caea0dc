package weir.lab.soak

import munit.FunSuite

import scala.concurrent.duration.*

class SoakLabSuite extends FunSuite:

  test("of every 1000 tasks: 40 flaky, 60 doomed, 20 snoozing, 10 cancelled, 1 long, the rest succeed") {
    val kinds = (0L until 1000L).groupBy(SoakTask.kind).view.mapValues(_.size).toMap
    assertEquals(
      kinds,
      Map(
        SoakTask.Kind.Flaky -> 40,
        SoakTask.Kind.Doomed -> 60,
        SoakTask.Kind.Snoozing -> 20,
        SoakTask.Kind.Cancelled -> 10,
        SoakTask.Kind.Long -> 1,
        SoakTask.Kind.Ok -> 869
      )
    )
    // the pattern repeats: task i and task i + 1000 do the same
    (0L until 1000L).foreach(i => assertEquals(SoakTask.kind(i + 1000), SoakTask.kind(i)))
  }

  test("a bad option is refused, naming the value") {
    assertEquals(SoakLab.check(List("--duration", "0s")), Left("--duration must be > 0s, was: 0s"))
    assert(SoakLab.check(List(
      "--duration",
      "10"
    )).left.exists(_.contains("Option --duration failed when given '10'")))
    assertEquals(SoakLab.check(List("--rate", "-5")), Left("--rate must be > 0, was: -5"))
    assert(SoakLab.check(List("--speed", "3")).left.exists(_.contains("--speed")))
    assertEquals(SoakLab.check(List("--quick", "--duration", "2m", "--json", "x.json")), Right(()))
  }

  test("the quick run feeds 30 s at most 500 tasks a second, sampling every 2 s at most") {
    val quick = SoakLab.Settings(quick = true)
    assertEquals(quick.feed.toSeconds, 30L)
    assertEquals(quick.perSecond, 500)
    assertEquals(quick.every.toMillis, 2000L)
    assertEquals(SoakLab.Settings(duration = 10.minutes).feed.toSeconds, 600L)
  }

  test("the service's done line: its numbers by name") {
    assertEquals(
      ServiceJvm.counts("done durable_succeeded=12 kafka_failures=3 name=x dead=0"),
      Map("durable_succeeded" -> 12L, "kafka_failures" -> 3L, "dead" -> 0L)
    )
  }

  test("lost counts durable tasks without an end and records neither handled nor dead-lettered") {
    val r = SoakLab.Results(
      SoakLab.Settings(),
      enqueued = 100,
      produced = 50,
      queue = weir.postgres.QueueStats("soak", 0, 0, 0, completed = 90, dead = 6, cancelled = 2),
      service = Map("kafka_succeeded" -> 45L, "dead_lettered" -> 4L),
      heap = HeapSeries(Vector.empty),
      feedSeconds = 1
    )
    assertEquals(r.durableLost, 2L)
    assertEquals(r.kafkaLost, 1L)
    assertEquals(r.lost, 3L)
  }

  test("a full run whose heap grew more than the bound fails it; a quick run's growth is not checked") {
    val growing = HeapSeries((0 to 60).toVector.map(i => (i * 10.0, 50.0 + i * 0.5))) // 15 MiB over 300 s
    val flat = HeapSeries((0 to 60).toVector.map(i => (i * 10.0, 50.0)))
    def results(quick: Boolean, heap: HeapSeries) = SoakLab.Results(
      SoakLab.Settings(quick = quick),
      enqueued = 0,
      produced = 0,
      queue = weir.postgres.QueueStats("soak", 0, 0, 0, 0, 0, 0),
      service = Map.empty,
      heap = heap,
      feedSeconds = 600
    )
    assertEqualsDouble(results(quick = false, growing).growth, 15.0, 0.01)
    assert(!results(quick = false, growing).growthHolds)
    assert(results(quick = false, flat).growthHolds)
    assert(results(quick = true, growing).growthHolds)
  }
