package weir

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import fs2.{Chunk, Stream}
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}

import scala.concurrent.duration.*

/**
 * How a producer reads its stream: by chunks, or, once the stream has given a run of one-element chunks,
 * element by element; whichever way, every element becomes one task, in the stream's order, offered at the
 * time it arrives, and a refusal stops the reading.
 */
class SourceReadingSuite extends CatsEffectSuite with ScalaCheckSuite:

  /** A stream of chunks of the given sizes over consecutive integers, `gap` between chunks. */
  private def chunked(sizes: List[Int], gap: FiniteDuration): Stream[IO, Int] =
    val starts = sizes.scanLeft(0)(_ + _)
    Stream
      .emits(sizes.zip(starts))
      .covary[IO]
      .flatMap((size, from) => Stream.sleep_[IO](gap) ++ Stream.chunk(Chunk.from(from until from + size)))

  private val shapes: Gen[List[Int]] =
    val run = Gen.oneOf(
      Gen.choose(1, 40).map(n => List.fill(n)(1)), // long enough to switch to elements, or not
      Gen.choose(2, 30).map(List(_)),
      Gen.choose(1, 5).flatMap(n => Gen.listOfN(n, Gen.choose(1, 4)))
    )
    Gen.choose(1, 6).flatMap(n => Gen.listOfN(n, run).map(_.flatten))

  property("every element of any chunking runs once, and input order holds across the switch to elements") {
    // chunks at one instant (a run of sixteen one-element chunks switches) or a millisecond apart (never)
    val gaps = Gen.oneOf(Duration.Zero, 1.milli)
    Prop.forAll(shapes, gaps, Gen.choose(1, 4), Gen.choose(1, 8)) { (sizes, gap, limit, buffer) =>
      val n = sizes.sum
      val run = Pipeline(chunked(sizes, gap))
        .process(i => IO.sleep((i % 3).millis).as(i))
        .withLimit(Limit.fixed(limit))
        .withBuffer(buffer)
        .withOrder(TaskOrder.inputOrder)
        .outcomes
        .collect { case TaskOutcome.Succeeded(i, _, _) => i }
        .compile
        .toVector
      assertEquals(TestControl.executeEmbed(run).unsafeRunSync(), (0 until n).toVector)
    }
  }

  test("one-element chunks that come apart are read by chunks: a large chunk after them is offered whole") {
    // twenty single elements, then 1,000 at once, into a buffer of ten, one task at a time: a producer
    // reading by chunks counts the whole chunk received while it waits for room, one reading element by
    // element only what it has offered; the singles come 1 ms apart, or all at once (which switches)
    def receivedAt30ms(gap: FiniteDuration) =
      val source = chunked(List.fill(20)(1) :+ 1000, gap)
      val run =
        Pipeline(source).process(_ => IO.sleep(1.milli)).withLimit(Limit.fixed(1)).withBuffer(10).start.use {
          running => IO.sleep(30.millis) *> running.snapshot.map(_.received)
        }
      TestControl.executeEmbed(run)
    for
      apart <- receivedAt30ms(1.milli)
      together <- receivedAt30ms(Duration.Zero)
    yield
      assertEquals(apart, 1020L)
      assert(together < 20 + 10 + 30, s"read element by element, the producer counted $together received")
  }

  test("elements placed in the buffer's inlet count as received as soon as they are held") {
    // two slow workers and a hundred places: past its first sixteen single elements the producer reads element
    // by element and places what fits in the inlet, which counts them. Then: 2 started; 98 to 100 held (the
    // workers' first takes may free places before the producer fills them: same-instant order); and 1 more
    // received, by the offer that waits for room (until half the buffer is free, ADR 0015)
    val run =
      Pipeline(Stream.range(0, 1000).covary[IO]).process(_ => IO.sleep(1.second)).withLimit(Limit.fixed(2))
        .withBuffer(100).start.use { running =>
          IO.sleep(500.millis) *> running.snapshot
        }
    TestControl.executeEmbed(run).map { s =>
      assertEquals((s.started, s.received - s.started - s.buffered), (2L, 1L), s)
      assert(s.buffered >= 98, s)
    }
  }

  test("a stream of single elements, then one large chunk, then single elements again: each task once") {
    val source = Stream.range(0, 40).covary[IO] ++ Stream.emits(40 until 5040) ++ Stream.range(5040, 5100)
    for summary <- Pipeline(source).process(_ => IO.unit).withLimit(Limit.fixed(8)).run
    yield
      assertEquals(summary.received, 5100L)
      assertEquals(summary.succeeded, 5100L)
  }

  test("read element by element, a refused producer reads no further and closes the stream") {
    // one task at a time, a buffer of two: the producer is at most a few elements ahead of the failure
    val run =
      for
        pulled <- Ref[IO].of(0)
        closed <- Ref[IO].of(false)
        source = Stream
          .bracket(IO.unit)(_ => closed.set(true))
          .flatMap(_ => Stream.range(0, 10000).covary[IO].evalTap(_ => pulled.update(_ + 1)))
        summary <- Pipeline(source)
          .process(i => IO.sleep(1.milli) *> IO.raiseWhen(i == 100)(new RuntimeException(s"task $i")))
          .withLimit(Limit.fixed(1))
          .withBuffer(2)
          .withFailurePolicy(FailurePolicy.failFast)
          .run
        n <- pulled.get
        c <- closed.get
      yield (summary, n, c)
    TestControl.executeEmbed(run).map { (summary, pulled, closed) =>
      assert(summary.stop.isInstanceOf[StopReason.FailedFast], summary.stop)
      assertEquals(summary.succeeded, 100L)
      assertEquals(summary.failed, 1L)
      assertEquals(summary.received, summary.succeeded + summary.failed + summary.notStarted)
      assert(pulled <= 101 + 2 + 2, s"the producer read $pulled elements, failing at the 101st")
      assert(closed, "the source's finalizer did not run")
    }
  }

  test("read element by element, each task's queue wait counts from its own element's arrival") {
    // twenty elements at once (the producer switches), then one every 2 ms; one slot, each task 3 ms: task i
    // starts at 3i, so waits 3i below 20 and, entering at 2(i - 19), i + 38 from then on
    val source = Stream.range(0, 20).covary[IO] ++
      Stream.range(20, 50).covary[IO].evalTap(_ => IO.sleep(2.millis))
    val run = Pipeline(source)
      .process(_ => IO.sleep(3.millis))
      .withLimit(Limit.fixed(1))
      .withQueueWaits
      .run
    TestControl.executeEmbed(run).map { summary =>
      val waits = summary.queueWait.getOrElse(fail("no queue waits"))
      assertEquals(waits.count, 50L)
      assertEquals(waits.max, 87.millis)
    }
  }
