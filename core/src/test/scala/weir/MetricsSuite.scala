package weir

import cats.effect.IO
import cats.effect.testkit.TestControl
import fs2.Stream
import munit.CatsEffectSuite

import scala.concurrent.duration.*

class MetricsSuite extends CatsEffectSuite:

  test("metrics: a snapshot at start, one per interval, a last one at the end, with exact counts") {
    val run = Pipeline(Stream.range(0, 10).covary[IO])
      .process(_ => IO.sleep(1.second))
      .withLimit(Limit.fixed(2))
      .withBuffer(4)
      .start
      // sampled half-way between completions, so no sample races with a task ending at the same instant
      .use(r => IO.sleep(500.millis) *> r.metrics(1.second).compile.toVector)
    TestControl.executeEmbed(run).map { snaps =>
      val sampled = snaps.init
      assertEquals(sampled.map(_.elapsed), (0 to 4).map(i => 500.millis + i.seconds).toVector)
      assertEquals(sampled.map(_.succeeded), Vector(0L, 2L, 4L, 6L, 8L), sampled.toString)
      assertEquals(sampled.map(_.started), Vector(2L, 4L, 6L, 8L, 10L), sampled.toString)
      val last = snaps.last
      assertEquals(last.succeeded, 10L)
      assertEquals(last.inFlight, 0L)
      assertEquals(last.buffered, 0L)
      assertEquals(last.finished, 10L)
      assertEquals(last.limit, 2)
      assert(sampled.forall(s => s.inFlight == 2L && s.workers == 2), sampled.toString)
    }
  }

  test("snapshot tracks received, buffered and in-flight while producers are held back by the buffer") {
    val run = Pipeline(Stream.range(0, 100).covary[IO])
      .process(_ => IO.never[Unit])
      .withLimit(Limit.fixed(3))
      .withBuffer(5)
      .start
      .use(r => IO.sleep(1.second) *> r.snapshot)
    TestControl.executeEmbed(run).map { s =>
      assertEquals(s.inFlight, 3L)
      assertEquals(s.started, 3L)
      assertEquals(s.workers, 3)
      // Stream.range emits one task at a time: 3 running, 1 held by the producer, and the buffer full (5) if
      // the workers took theirs before it first filled, else 4: a waiting producer is woken only once half
      // the buffer (two places) is free, so it refilled two of the three places the workers freed
      assert(s.buffered == 4L || s.buffered == 5L, s)
      assertEquals(s.received, 3L + s.buffered + 1L)
    }
  }
