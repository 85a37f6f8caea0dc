package weir.runtime.internal

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}
import weir.runtime.internal.TimerScheduler.Timer

import java.util.concurrent.{ConcurrentLinkedQueue, CountDownLatch, TimeUnit}
import java.util.concurrent.atomic.{AtomicInteger, AtomicIntegerArray}
import scala.concurrent.duration.*

/**
 * The timer thread of weir's runtime: every timer runs once and never before its deadline, whichever
 * threads set it; a cancelled one never runs; cancelled timers are swept out of a large heap; a callback
 * that throws is reported and the thread goes on; after the stop nothing runs. The heap itself is checked
 * against a sorted list.
 */
class TimerSchedulerSuite extends ScalaCheckSuite:

  override def munitTimeout: Duration = 60.seconds

  // the scheduler the heap property's timers report their cancellation to
  private lazy val (owner, stopOwner) =
    val (scheduler, stop) = TimerScheduler.start(_ => ())
    (scheduler.asInstanceOf[TimerScheduler], stop)

  override def afterAll(): Unit = stopOwner()

  private def withScheduler[A](body: (TimerScheduler, ConcurrentLinkedQueue[Throwable]) => A): A =
    val failures = new ConcurrentLinkedQueue[Throwable]
    val (scheduler, stop) = TimerScheduler.start(failures.add(_): Unit)
    try body(scheduler.asInstanceOf[TimerScheduler], failures)
    finally stop()

  // What the timer thread itself sees: read on that thread by a timer due at once.
  private def pendingSeenByTheThread(scheduler: TimerScheduler): Int =
    val seen = new AtomicInteger(-1)
    val done = new CountDownLatch(1)
    val _ = scheduler.sleep(Duration.Zero, () => { seen.set(scheduler.pending); done.countDown() })
    assert(done.await(10, TimeUnit.SECONDS))
    seen.get

  test("every timer set from four threads runs exactly once, at or after its deadline") {
    withScheduler { (scheduler, failures) =>
      val perThread = 2000
      val runs = new AtomicIntegerArray(4 * perThread)
      val early = new AtomicInteger(0)
      val done = new CountDownLatch(4 * perThread)
      val setters = (0 until 4).map { t =>
        new Thread(() => {
          val random = new scala.util.Random(t)
          for i <- 0 until perThread do
            val id = t * perThread + i
            val delay = random.nextInt(3000).micros
            val earliest = System.nanoTime() + delay.toNanos
            val _ = scheduler.sleep(
              delay,
              () => {
                if System.nanoTime() < earliest then early.incrementAndGet(): Unit
                runs.incrementAndGet(id): Unit
                done.countDown()
              }
            )
        })
      }
      setters.foreach(_.start())
      setters.foreach(_.join())
      assert(done.await(30, TimeUnit.SECONDS), s"${done.getCount} timers never ran")
      assertEquals((0 until runs.length).count(runs.get(_) != 1), 0)
      assertEquals(early.get, 0)
      assert(failures.isEmpty)
    }
  }

  test("a cancelled timer never runs; cancelling after it ran, or twice, changes nothing") {
    withScheduler { (scheduler, _) =>
      val ran = new AtomicInteger(0)
      val cancel = scheduler.sleep(30.millis, () => ran.incrementAndGet(): Unit)
      cancel.run()
      cancel.run()
      val done = new CountDownLatch(1)
      val after = scheduler.sleep(1.milli, () => { ran.addAndGet(10): Unit; done.countDown() })
      assert(done.await(10, TimeUnit.SECONDS))
      after.run()
      // set after the cancelled timer with a longer delay, so due later: by the time it runs, the timer
      // thread has passed the cancelled timer's deadline
      val past = new CountDownLatch(1)
      val _ = scheduler.sleep(31.millis, () => past.countDown())
      assert(past.await(10, TimeUnit.SECONDS))
      assertEquals(ran.get, 10)
      assertEquals(pendingSeenByTheThread(scheduler), 0)
    }
  }

  test("cancelled timers are swept out of a large heap; the live ones stay and run") {
    withScheduler { (scheduler, _) =>
      val live = new AtomicInteger(0)
      val cancels = (0 until 5000).map(_ => scheduler.sleep(1.hour, () => live.incrementAndGet(): Unit))
      assertEquals(pendingSeenByTheThread(scheduler), 5000)
      cancels.take(4000).foreach(_.run())
      assertEquals(pendingSeenByTheThread(scheduler), 1000)
      assertEquals(live.get, 0)
    }
  }

  test("a callback that throws is reported, and later timers still run") {
    withScheduler { (scheduler, failures) =>
      val boom = new RuntimeException("boom")
      val done = new CountDownLatch(1)
      val _ = scheduler.sleep(1.milli, () => throw boom)
      val _ = scheduler.sleep(2.millis, () => done.countDown())
      assert(done.await(10, TimeUnit.SECONDS))
      assertEquals(failures.peek(), boom)
      assertEquals(failures.size, 1)
    }
  }

  test("a deadline past the clock's range is never reached, not in the past; a negative delay is none") {
    assertEquals(TimerScheduler.deadlineAfter(Long.MaxValue - 10, 100L), Long.MaxValue)
    assertEquals(TimerScheduler.deadlineAfter(5L, -3L), 5L)
    assertEquals(TimerScheduler.deadlineAfter(-50L, 20L), -30L)
    withScheduler { (scheduler, _) =>
      val ran = new AtomicInteger(0)
      val _ = scheduler.sleep(FiniteDuration(Long.MaxValue, NANOSECONDS), () => ran.incrementAndGet(): Unit)
      val done = new CountDownLatch(1)
      val _ = scheduler.sleep(1.milli, () => done.countDown())
      assert(done.await(10, TimeUnit.SECONDS))
      assertEquals(pendingSeenByTheThread(scheduler), 1)
      assertEquals(ran.get, 0)
    }
  }

  test("the stop ends the timer thread: pending timers, and timers set later, never run") {
    val (scheduler, stop) = TimerScheduler.start(_ => ())
    val ran = new AtomicInteger(0)
    val _ = scheduler.sleep(1.hour, () => ran.incrementAndGet(): Unit)
    stop()
    assert(scheduler.asInstanceOf[TimerScheduler].awaitStopped(10_000), "the timer thread outlived the stop")
    val _ = scheduler.sleep(Duration.Zero, () => ran.incrementAndGet(): Unit)
    assertEquals(ran.get, 0)
  }

  private val step: Gen[Either[Long, Int]] =
    Gen.frequency(
      5 -> Gen.choose(-1000L, 1000L).map(Left(_)),
      3 -> Gen.const(Right(0)),
      1 -> Gen.const(Right(1))
    )

  property("the heap gives timers back earliest first, and sweeping keeps the live ones in order") {
    Prop.forAll(Gen.listOf(step)) { steps =>
      val heap = new TimerHeap
      var model = Vector.empty[Timer]
      steps.foreach {
        case Left(deadline) =>
          val timer = new Timer(deadline, () => (), owner)
          heap.add(timer)
          model = model :+ timer
        case Right(0) if model.nonEmpty =>
          val first = heap.removeFirst()
          assertEquals(first.deadline, model.map(_.deadline).min)
          model = model.diff(Vector(first))
        case Right(_) =>
          model.zipWithIndex.foreach((t, i) => if i % 2 == 0 then t.run())
          heap.removeCancelled()
          model = model.filter(_.task != null)
      }
      assertEquals(heap.size, model.size)
      val drained = Vector.fill(heap.size)(heap.removeFirst().deadline)
      assertEquals(drained, model.map(_.deadline).sorted)
    }
  }
