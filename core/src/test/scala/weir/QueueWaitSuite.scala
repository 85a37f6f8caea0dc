package weir

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import fs2.{Chunk, Stream}
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}

import scala.concurrent.duration.*

/**
 * Queue waits ([[Pipeline.withQueueWaits]]) in virtual time: each task's wait is exactly the time from
 * entering the buffer to the start of its first attempt.
 */
class QueueWaitSuite extends CatsEffectSuite with ScalaCheckSuite:

  override def scalaCheckTestParameters = super.scalaCheckTestParameters.withMinSuccessfulTests(100)

  private def ms(n: Long): FiniteDuration = n.millis

  /** The summary's waits and the live histogram read after the run, which must agree. */
  private def waits[B](pipeline: Pipeline[IO, Int, B]): IO[(Summary[Int], DurationHistogram)] =
    pipeline.withQueueWaits.start.use(r =>
      (r.join, r.queueWaits).mapN((s, h) => (s, h.getOrElse(fail("no queue waits"))))
    )

  test("off by default: no live histogram and no summary of the waits") {
    val run = Pipeline(Stream.range(0, 10).covary[IO]).process(_ => IO.sleep(1.milli)).start.use { r =>
      (r.join, r.queueWaits).tupled
    }
    TestControl.executeEmbed(run).map { (summary, live) =>
      assertEquals(summary.succeeded, 10L)
      assertEquals(summary.queueWait, None)
      assertEquals(live, None)
    }
  }

  test("one slot, one chunk at time zero: task i waits i × 10 ms") {
    val run = waits(
      Pipeline(Stream.emits(0 until 5).covary[IO]).process(_ => IO.sleep(10.millis)).withLimit(Limit.fixed(1))
    )
    TestControl.executeEmbed(run).map { (summary, h) =>
      assertEquals(h.count, 5L)
      assertEquals(h.sum, ms(0 + 10 + 20 + 30 + 40))
      assertEquals(h.max, ms(40))
      assertEquals(h.bucketCounts(List(ms(5), ms(15), ms(25))), Vector(1L, 1L, 1L, 2L))
      val q = summary.queueWait.getOrElse(fail("no summary of the waits"))
      assertEquals(q.count, 5L)
      assertEquals(q.mean, ms(20))
      assertEquals(q.max, ms(40))
    }
  }

  test(
    "a task held by its producer while the buffer is full has not entered it: its wait starts at the append"
  ) {
    // buffer of one, one slot, a chunk of three at time zero: task 0 starts at once; task 1 enters when task 0
    // is taken (at 0) and starts at 10; task 2 enters when task 1 is taken (at 10) and starts at 20. Counted
    // from the producer's emit, the waits would be 0, 10 and 20
    val run = waits(
      Pipeline(Stream.emits(0 until 3).covary[IO])
        .process(_ => IO.sleep(10.millis))
        .withLimit(Limit.fixed(1))
        .withBuffer(1)
    )
    TestControl.executeEmbed(run).map { (_, h) =>
      assertEquals(h.count, 3L)
      assertEquals(h.sum, ms(20))
      assertEquals(h.max, ms(10))
    }
  }

  test("per key: a task parked behind its key waits until its turn, on the key's hand-on path") {
    // three tasks of one key, three slots: they run one after another, waiting 0, 10 and 20 ms
    val run = waits(
      Pipeline(Stream.emits(0 until 3).covary[IO])
        .process(_ => IO.sleep(10.millis))
        .withLimit(Limit.fixed(3))
        .withOrder(TaskOrder.byKey(_ => "k"))
    )
    TestControl.executeEmbed(run).map { (_, h) =>
      assertEquals((h.count, h.sum, h.max), (3L, ms(30), ms(20)))
    }
  }

  test("a rate-limit permit's wait counts, a retry's backoff does not") {
    // one permit per 100 ms, burst one: the two tasks start at 0 and 100 (whichever worker asks first).
    // Task 0 fails its first attempt and retries after a 1 s backoff (and a permit): that second start is
    // not a queue wait
    val run = RateLimiter.tokenBucket[IO](10.0, burst = 1).flatMap { limiter =>
      Ref.of[IO, Boolean](false).flatMap { failed =>
        waits(
          Pipeline(Stream.emits(0 until 2).covary[IO])
            .process(i =>
              if i != 0 then IO.unit
              else failed.getAndSet(true).flatMap(before => IO.raiseError(new Exception).whenA(!before))
            )
            .withLimit(Limit.fixed(2))
            .withRateLimit(limiter)
            .withRetry(Retry.exponential(1.second, maxAttempts = 2, jitter = Retry.Jitter.Off))
        )
      }
    }
    TestControl.executeEmbed(run).map { (summary, h) =>
      assertEquals(summary.retries, 1L)
      assertEquals(summary.succeeded, 2L)
      assertEquals((h.count, h.sum, h.max), (2L, ms(100), ms(100)))
    }
  }

  test("live: the histogram grows as tasks start, before they end") {
    val run = Pipeline(Stream.emits(0 until 4).covary[IO])
      .process(_ => IO.sleep(10.millis))
      .withLimit(Limit.fixed(1))
      .withQueueWaits
      .start
      .use(r => IO.sleep(15.millis) *> r.queueWaits)
    TestControl.executeEmbed(run).map { h =>
      val started = h.getOrElse(fail("no queue waits"))
      assertEquals((started.count, started.sum), (2L, ms(10))) // tasks 0 and 1 started, at 0 and 10
    }
  }

  /**
   * A random run whose buffer holds every task, so that a task enters the buffer when its producer emits
   * it: producers emitting chunks after random pauses, random slots and durations, per key or not, some
   * tasks failing their first attempt.
   */
  final case class Scenario(
      producers: Int,
      tasks: Int,
      chunk: Int,
      pause: Int,
      limit: Int,
      durations: Vector[Int],
      keys: Option[Int],
      failOnce: Set[Int]
  )

  private val scenarios: Gen[Scenario] =
    for
      producers <- Gen.choose(1, 3)
      tasks <- Gen.choose(1, 40)
      chunk <- Gen.choose(1, 6)
      pause <- Gen.choose(0, 7)
      limit <- Gen.choose(1, 6)
      durations <- Gen.listOfN(producers * tasks, Gen.choose(0, 9)).map(_.toVector)
      keys <- Gen.option(Gen.choose(1, 4))
      failOnce <- Gen.containerOf[Set, Int](Gen.choose(0, producers * tasks - 1))
    yield Scenario(producers, tasks, chunk, pause, limit, durations, keys, failOnce)

  property("each wait is the time from the producer's emit to the first attempt's start, exactly") {
    Prop.forAll(scenarios) { sc =>
      val n = sc.producers * sc.tasks
      val run =
        for
          emitted <- Ref.of[IO, Map[Int, Long]](Map.empty)
          started <- Ref.of[IO, Map[Int, Long]](Map.empty)
          now = IO.monotonic.map(_.toNanos)
          source = Source.partitioned[IO, Int](sc.producers) { p =>
            Stream
              .range(p * sc.tasks, (p + 1) * sc.tasks)
              .chunkN(sc.chunk)
              .flatMap { c =>
                Stream.sleep_[IO](ms(sc.pause.toLong)) ++
                  Stream.exec(now.flatMap(t => emitted.update(_ ++ c.iterator.map(_ -> t)))) ++
                  Stream.chunk(c)
              }
          }
          handler = (i: Int) =>
            now.flatMap(t =>
              started.modify(m => if m.contains(i) then (m, true) else (m.updated(i, t), false))
            )
              .flatMap { again =>
                IO.sleep(ms(sc.durations(i).toLong)) *>
                  IO.raiseError(new Exception(s"first attempt of $i")).whenA(sc.failOnce(i) && !again)
              }
          base = Pipeline(source)
            .process(handler)
            .withLimit(Limit.fixed(sc.limit))
            .withBuffer(n)
            .withRetry(Retry.exponential(3.millis, maxAttempts = 2, jitter = Retry.Jitter.Off))
          pipeline = sc.keys.fold(base)(k => base.withOrder(TaskOrder.byKey(_ % k)))
          result <- waits(pipeline)
          e <- emitted.get
          s <- started.get
        yield (result, e, s)
      val ((summary, h), emitted, started) = TestControl.executeEmbed(run).unsafeRunSync()
      val expected = (0 until n).map(i => started(i) - emitted(i))
      assertEquals(summary.succeeded, n.toLong)
      assertEquals(h.count, n.toLong)
      assertEquals(h.sum, expected.sum.nanos)
      assertEquals(h.max, expected.max.nanos)
      assertEquals(summary.queueWait.map(_.count), Some(n.toLong))
    }
  }

  test("each chunk keeps the time it entered: a later chunk's tasks wait from their own arrival") {
    // two chunks, the second arriving 3 ms after the first, behind task 1 still waiting; one slot, tasks of
    // 5 ms. Starts: 0, 5, 10, 15; entries: 0, 0, 3, 3 → waits 0, 5, 7, 12
    val source = Stream.chunk(Chunk(0, 1)).covary[IO] ++ Stream.sleep_[IO](3.millis) ++
      Stream.chunk(Chunk(2, 3))
    val run = waits(Pipeline(source).process(_ => IO.sleep(5.millis)).withLimit(Limit.fixed(1)))
    TestControl.executeEmbed(run).map { (_, h) =>
      assertEquals((h.count, h.sum, h.max), (4L, ms(24), ms(12)))
    }
  }
