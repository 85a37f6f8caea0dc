package weir

import cats.effect.{IO, Resource}
import cats.effect.unsafe.IORuntime
import cats.syntax.all.*
import fs2.Stream
import munit.CatsEffectSuite

import java.util.concurrent.atomic.AtomicIntegerArray
import scala.concurrent.duration.*
import scala.util.Random

/**
 * `AccountingSuite`'s exactly-once check on the real runtime, where the producer's plain hand-overs, the
 * workers' parking and their cancellation truly race on two threads (virtual time runs one fiber at a time).
 * Runs of random shape are drained at a random moment, some with a deadline that interrupts what still
 * runs; every task the source gave must end exactly once: succeeded, interrupted or returned unstarted, no
 * handler may begin twice, and no worker may be left counted. (It found a producer growing the pool while a
 * deadline killed the workers: the failed start lost the rest of the producer's chunk.) The same under a
 * task timeout, where an attempt's end, its deadline, the standby that takes the worker's place and a kill
 * race.
 */
class RealRuntimeAccountingSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 60.seconds
  // Cats Effect's own pools with its external timer thread, not the pool's timer heaps, which can livelock
  // when many short sleeps end together (typelevel/cats-effect#4674): the engine needs no runtime of weir's
  override implicit lazy val munitIORuntime: IORuntime =
    val (scheduler, stopScheduler) = IORuntime.createDefaultScheduler()
    IORuntime.builder().setScheduler(scheduler, stopScheduler).build()

  /**
   * Runs `start`, drains it `drainAfter` later with `deadline`: its summary, and the workers still counted
   * once the drain returned.
   */
  private def drainedAt(drainAfter: FiniteDuration, deadline: FiniteDuration)(
      start: Resource[IO, Running[IO, Int]]
  ): IO[(Summary[Int], Int)] =
    start.use(running =>
      IO.sleep(drainAfter) *> running.drain(deadline).product(running.snapshot.map(_.workers))
    )

  private def once(seed: Long): IO[Unit] =
    val r = new Random(seed)
    val n = 500 + r.nextInt(1500)
    val limit = 1 + r.nextInt(64)
    val buffer = 1 + r.nextInt(64)
    val oneChunk = r.nextBoolean()
    val order: TaskOrder[Int] = r.nextInt(3) match
      case 0 => TaskOrder.unordered
      case 1 => TaskOrder.inputOrder
      case _ => TaskOrder.byKey(_ % 7)
    val drainAfter = r.nextInt(4000).micros
    val deadline = if r.nextBoolean() then Duration.Zero else r.nextInt(1000).micros
    val begun = new AtomicIntegerArray(n)
    val handler = (i: Int) =>
      IO(begun.incrementAndGet(i)) *>
        (i % 3 match
          case 0 => IO.unit
          case 1 => IO.cede
          case _ => IO.sleep((i % 200).micros))
    val source = if oneChunk then Stream.emits(0 until n).covary[IO] else Stream.range(0, n).covary[IO]
    val run = drainedAt(drainAfter, deadline)(Pipeline(source)
      .process(handler)
      .withLimit(Limit.fixed(limit))
      .withBuffer(buffer)
      .withOrder(order)
      .withFailureSample(n) // every interrupted task, to check each is accounted for
      .start)
    run.map { (s, workersLeft) =>
      val shape = s"seed $seed: n=$n limit=$limit buffer=$buffer oneChunk=$oneChunk $order " +
        s"drain after $drainAfter within $deadline: $s"
      val started = (0 until n).filter(begun.get(_) > 0).toSet
      val interrupted = s.failures.map(_.task).toSet
      val unstarted = s.unstarted.toSet
      val succeeded = started -- interrupted
      assert((0 until n).forall(begun.get(_) <= 1), s"a handler began twice: $shape")
      assert(s.failures.forall(_.disposition == Disposition.Interrupted), shape)
      assertEquals(s.failed, interrupted.size.toLong, shape)
      assertEquals(s.notStarted, unstarted.size.toLong, shape)
      assertEquals(s.unstarted.size, unstarted.size, s"an unstarted task twice: $shape")
      assertEquals(s.succeeded, succeeded.size.toLong, shape)
      assertEquals(unstarted.intersect(started), Set.empty[Int], shape)
      assertEquals(unstarted.intersect(interrupted), Set.empty[Int], shape)
      // a single producer's received tasks are a prefix of the source: each ended exactly one way
      assertEquals(succeeded ++ interrupted ++ unstarted, (0 until s.received.toInt).toSet, shape)
      assertEquals(s.received, s.succeeded + s.failed + s.notStarted, shape)
      assertEquals(workersLeft, 0, s"workers still counted after the run: $shape")
    }

  test("drained at random moments on the real runtime, every task ends exactly once") {
    (1L to 150L).toList.traverse_(once)
  }

  /*
   * The same under a task timeout that some attempts overrun, with retries: an attempt's end and its
   * deadline, the standby's take-over and a drain's kill race on two threads.
   */
  private def timedOnce(seed: Long): IO[Unit] =
    val r = new Random(seed)
    val n = 200 + r.nextInt(800)
    val limit = 1 + r.nextInt(32)
    val timeout = (50 + r.nextInt(150)).micros
    val attempts = 1 + r.nextInt(3)
    val retry = Retry.exponential(r.nextInt(100).micros, attempts, factor = 1.0, jitter = Retry.Jitter.Off)
    val drainAfter = r.nextInt(8000).micros
    val deadline = if r.nextBoolean() then Duration.Zero else r.nextInt(2000).micros
    val begun = new AtomicIntegerArray(n)
    val handler = (i: Int) =>
      IO(begun.incrementAndGet(i)) *>
        (i % 4 match
          case 0 => IO.unit
          case 1 => IO.cede
          case 2 => IO.sleep((i % 300).micros)
          case _ => IO.never)
    val run = drainedAt(drainAfter, deadline)(Pipeline(Stream.range(0, n).covary[IO])
      .process(handler)
      .withLimit(Limit.fixed(limit))
      .withTaskTimeout(timeout)
      .withRetry(retry)
      .withFailureSample(n)
      .start)
    run.map { (s, workersLeft) =>
      val shape = s"seed $seed: n=$n limit=$limit timeout=$timeout attempts=$attempts " +
        s"drain after $drainAfter within $deadline: $s"
      val started = (0 until n).filter(begun.get(_) > 0).toSet
      val failed = s.failures.map(_.task).toSet
      val unstarted = s.unstarted.toSet
      assert((0 until n).forall(begun.get(_) <= attempts), s"a handler began too often: $shape")
      assert(
        s.failures.forall(f =>
          f.error.isInstanceOf[TaskTimedOut] || f.disposition == Disposition.Interrupted
        ),
        shape
      )
      assertEquals(s.failed, failed.size.toLong, s"a task failed twice: $shape")
      assertEquals(s.unstarted.size, unstarted.size, s"an unstarted task twice: $shape")
      assertEquals(s.succeeded, (started -- failed).size.toLong, shape)
      assertEquals(unstarted.intersect(started), Set.empty[Int], shape)
      // an attempt cancelled (by a kill or its deadline) before its handler's first step never began
      assertEquals(started ++ failed ++ unstarted, (0 until s.received.toInt).toSet, shape)
      assertEquals(s.received, s.succeeded + s.failed + s.notStarted, shape)
      assertEquals(workersLeft, 0, s"workers still counted after the run: $shape")
    }

  test("under a task timeout, with retries, drained at random moments, every task ends exactly once") {
    (1L to 150L).toList.traverse_(timedOnce)
  }
