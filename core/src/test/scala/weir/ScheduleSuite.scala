package weir

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import fs2.{Chunk, Stream}
import munit.CatsEffectSuite

import scala.concurrent.duration.*
import scala.util.Random

/** weir against the ideal schedule, in virtual time, where any overhead would show exactly. */
class ScheduleSuite extends CatsEffectSuite:

  /** The seed's slow-producer shape: batches of 100 every second from each producer; 10–100 ms per task. */
  private val producers = 2
  private val total = 1000
  private val batch = 100
  private val produceDelay = 1000L
  private val durations: Vector[Long] =
    val rnd = new Random(42)
    Vector.fill(total)(10L + rnd.nextInt(91))

  /** Producer `p`; records each batch in `arrivals` just before handing it over (no yield in between). */
  private def producer(arrivals: Ref[IO, Vector[(Int, Long)]])(p: Int): Stream[IO, Int] =
    val mine = total / producers
    Stream.range(0, mine / batch).flatMap { b =>
      val ids = (p * mine + b * batch) until (p * mine + b * batch + batch)
      Stream.exec(IO.sleep(produceDelay.millis)) ++
        Stream.exec(IO.monotonic.flatMap(t => arrivals.update(_ ++ ids.map(i => (i, t.toMillis))))) ++
        Stream.chunk(Chunk.from(ids))
    }

  test("slow producer, two producers: weir finishes at exactly the ideal makespan") {
    val run =
      for
        arrivals <- Ref.of[IO, Vector[(Int, Long)]](Vector.empty)
        summary <- Pipeline(Source.partitioned(producers)(producer(arrivals)))
          .process(i => IO.sleep(durations(i).millis))
          .withLimit(Limit.fixed(100))
          .withBuffer(2 * batch)
          .run
        arrived <- arrivals.get
      yield (summary, arrived)
    TestControl.executeEmbed(run).map { (summary, arrived) =>
      // the ideal for the same arrivals (same times, same interleaving of the two producers)
      val ideal = IdealSchedule.makespan(arrived.map(_._2), arrived.map(a => durations(a._1)), slots = 100)
      assertEquals(arrived.size, total)
      assertEquals(summary.succeeded, total.toLong)
      assertEquals(summary.elapsed.toMillis, ideal)
      assert(ideal > 5000L && ideal < 5100L + 100L, s"ideal $ideal")
    }
  }

  test("input order without an outcome stream: the window still bounds how far starts run ahead") {
    // as above, through `run` (the workers' lean path): task 5 may start only once task 0 ends at t = 10 s
    val run =
      for
        starts <- Ref.of[IO, Map[Int, FiniteDuration]](Map.empty)
        summary <- Pipeline(Stream.range(0, 20).covary[IO])
          .process(i =>
            IO.monotonic.flatMap(t => starts.update(_.updated(i, t))) *>
              IO.sleep(if i == 0 then 10.seconds else 1.second)
          )
          .withLimit(Limit.fixed(4))
          .withOrder(TaskOrder.inputOrder(5))
          .run
        started <- starts.get
      yield (summary, started)
    TestControl.executeEmbed(run).map { (summary, started) =>
      assertEquals(summary.succeeded, 20L)
      assertEquals((0 to 5).map(started), Vector(0, 0, 0, 0, 1, 10).map(_.seconds))
      assert((6 until 20).forall(started(_) >= 10.seconds), started.toString)
    }
  }

  test("input order: outcomes come out in order and the window bounds how far starts run ahead") {
    // task 0 is slow; with window 5, tasks 5.. cannot start before task 0 ends at t = 10 s
    val run = Pipeline(Stream.range(0, 20).covary[IO])
      .process(i => IO.sleep(if i == 0 then 10.seconds else 1.second) *> IO.monotonic.map(t => (i, t)))
      .withLimit(Limit.fixed(4))
      .withOrder(TaskOrder.inputOrder(5))
      .outcomes
      .compile
      .toVector
    TestControl.executeEmbed(run).map { outcomes =>
      val done = outcomes.collect { case TaskOutcome.Succeeded(_, v, _) => v }
      assertEquals(done.map(_._1), (0 until 20).toVector)
      // tasks 1..4 end by 2 s; task 5 waits for the window and ends at 11 s
      assert(done.take(5).drop(1).forall(_._2 <= 2.seconds), done.toString)
      assertEquals(done(5)._2, 11.seconds)
    }
  }
