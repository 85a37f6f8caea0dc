package weir

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import fs2.Stream
import munit.CatsEffectSuite

import scala.concurrent.duration.*

/** Per-key ordering, with exact expectations in virtual time. */
class KeyOrderSuite extends CatsEffectSuite:

  /** Tasks are (key, id); each records (id, start, end) and sleeps `len(id)`. */
  private def runKeyed(
      tasks: List[(String, Int)],
      limit: Int,
      len: Int => FiniteDuration,
      buffer: Int = 100
  ) =
    for
      log <- Ref.of[IO, Vector[(Int, FiniteDuration, FiniteDuration)]](Vector.empty)
      summary <- Pipeline(Stream.emits(tasks).covary[IO])
        .process { (_, id) =>
          IO.monotonic.flatMap(t0 =>
            IO.sleep(len(id)) *> IO.monotonic.flatMap(t1 => log.update(_ :+ (id, t0, t1)))
          )
        }
        .withLimit(Limit.fixed(limit))
        .withBuffer(buffer)
        .withOrder(TaskOrder.byKey(_._1))
        .run
      entries <- log.get
    yield (summary, entries.sortBy(_._1))

  test("tasks of one key run one at a time, in input order; other keys run beside them") {
    val tasks = List("a" -> 0, "b" -> 1, "a" -> 2, "a" -> 3, "b" -> 4, "c" -> 5)
    TestControl.executeEmbed(runKeyed(tasks, limit = 4, _ => 1.second)).map { (s, log) =>
      assertEquals(s.succeeded, 6L)
      val starts = log.map(e => e._1 -> e._2.toSeconds).toMap
      assertEquals(starts, Map(0 -> 0L, 1 -> 0L, 2 -> 1L, 3 -> 2L, 4 -> 1L, 5 -> 0L))
      assertEquals(s.elapsed, 3.seconds)
    }
  }

  test("a slow key holds one slot and never blocks the other keys") {
    val tasks = ("slow" -> 0) :: ("slow" -> 1) :: (2 until 12).map(i => s"k$i" -> i).toList
    val len = (id: Int) => if id == 0 then 10.seconds else 1.second
    TestControl.executeEmbed(runKeyed(tasks, limit = 2, len)).map { (s, log) =>
      val ends = log.map(e => e._1 -> e._3.toSeconds).toMap
      // one slot is held by task 0 for 10 s; the other runs tasks 2..11 back to back (task 1 is parked, slot-free)
      assertEquals((2 until 12).map(ends), (1L to 10L).toVector)
      assertEquals(ends(1), 11L)
      assertEquals(s.elapsed, 11.seconds)
    }
  }

  test("parked tasks keep their places in the buffer, so a hot key cannot make it grow") {
    val run = Pipeline(Stream.range(0, 100).covary[IO])
      .process(_ => IO.never[Unit])
      .withLimit(Limit.fixed(4))
      .withBuffer(5)
      .withOrder(TaskOrder.byKey(_ => "hot"))
      .start
      .use(r => IO.sleep(1.second) *> r.snapshot)
    TestControl.executeEmbed(run).map { s =>
      assertEquals(s.inFlight, 1L)
      // 1 running + the parked ones (their places still taken) + 1 held by the producer: 5 parked if the
      // running task was taken before the buffer first filled, else 4: a waiting producer is woken only once
      // half the buffer (two places) is free, and the one place the running task freed is not enough
      assert(s.buffered == 4L || s.buffered == 5L, s)
      assertEquals(s.received, 1L + s.buffered + 1L)
    }
  }

  test("a drain returns parked tasks as not started") {
    val run = Pipeline(Stream.range(0, 10).covary[IO])
      .process(_ => IO.sleep(1.second))
      .withLimit(Limit.fixed(4))
      .withOrder(TaskOrder.byKey(_ % 2))
      .start
      .use(r => IO.sleep(1500.millis) *> r.drain(5.seconds))
    TestControl.executeEmbed(run).map { s =>
      // keys 0 and 1: tasks 0,1 at 0 s; 2,3 at 1 s; drained at 1.5 s, so 2,3 finish and 4..9 come back
      assertEquals(s.succeeded, 4L)
      assertEquals(s.unstarted.sorted, (4 until 10).toVector)
      assertEquals(s.elapsed, 2.seconds)
    }
  }

  test("a key function that throws fails that task, not the run") {
    Pipeline(Stream.range(0, 4).covary[IO])
      .process(IO.pure)
      .withOrder(TaskOrder.byKey(i => if i == 2 then throw new IllegalArgumentException("no key") else i))
      .run
      .map { s =>
        assertEquals(s.succeeded, 3L)
        assertEquals(s.failures.map(f => (f.task, f.error.getMessage)), Vector(2 -> "no key"))
      }
  }

  test("one hot key filling the buffer: each task it finishes makes room, and the waiting producer goes on") {
    // buffer 4, all tasks of one key, one task per chunk: three wait behind the running one and the producer
    // waits for room; finishing tasks hands on the next ones and, once half the buffer is free, must wake
    // the producer
    val tasks = List.tabulate(12)(i => "hot" -> i)
    val run =
      for
        log <- Ref.of[IO, Vector[(Int, FiniteDuration)]](Vector.empty)
        summary <- Pipeline(Stream.emits(tasks).covary[IO].chunkLimit(1).unchunks)
          .process((_, id) => IO.monotonic.flatMap(t => log.update(_ :+ (id, t))) *> IO.sleep(1.second))
          .withLimit(Limit.fixed(2))
          .withBuffer(4)
          .withOrder(TaskOrder.byKey(_._1))
          .run
        entries <- log.get
      yield (summary, entries)
    TestControl.executeEmbed(run).map { (s, log) =>
      assertEquals(s.succeeded, 12L)
      assertEquals(log, Vector.tabulate(12)(i => i -> i.seconds))
    }
  }
