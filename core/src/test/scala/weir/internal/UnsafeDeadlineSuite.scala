package weir.internal

import munit.FunSuite
import weir.internal.UnsafeDeadline.Look

import java.util.concurrent.CyclicBarrier
import java.util.concurrent.atomic.{AtomicInteger, AtomicReference}

/**
 * The race an [[UnsafeDeadline]] settles, on its own: an attempt's end against its deadline, the standby's
 * park against the worker's arming, and a deadline fired for an attempt that ended and was followed by
 * another.
 */
class UnsafeDeadlineSuite extends FunSuite:

  /** A parked standby's wake-up, counting its calls. */
  final class Wake extends (Either[Throwable, Unit] => Unit):
    val calls = new AtomicInteger
    def apply(r: Either[Throwable, Unit]): Unit = calls.incrementAndGet(): Unit

  test("the standby sleeps until the deadline armed, fires it once it has passed, and the end then loses") {
    val d = new UnsafeDeadline
    d.arm(100)
    assertEquals(d.look(40), Look.Sleep(60))
    assertEquals(d.look(100), Look.Fired)
    assert(!d.disarm(), "the end after the deadline fired")
    assert(!d.close(), "the worker must not wait for a standby that fired")
  }

  test("an end before the deadline wins; the standby finds no attempt and parks, and fires nothing") {
    val d = new UnsafeDeadline
    d.arm(100)
    assert(d.disarm())
    assertEquals(d.look(200), Look.Park)
    assert(d.close())
    assertEquals(d.look(200), Look.Closed)
  }

  test("each attempt has its own deadline: a standby woken for an earlier one sleeps on until the next") {
    val d = new UnsafeDeadline
    d.arm(100)
    assertEquals(d.look(0), Look.Sleep(100))
    assert(d.disarm())
    d.arm(150) // the next attempt, started at 50 with the same limit
    assertEquals(d.look(100), Look.Sleep(50))
    assertEquals(d.look(150), Look.Fired)
  }

  test("a parked standby is woken once by the next arming, and once by the worker's close") {
    val d = new UnsafeDeadline
    val wake = new Wake
    d.park(wake)
    assertEquals(wake.calls.get, 0)
    d.arm(10)
    assertEquals(wake.calls.get, 1)
    assert(d.disarm())
    val again = new Wake
    d.park(again)
    assert(d.close())
    assertEquals((wake.calls.get, again.calls.get), (1, 1))
    assertEquals(d.look(0), Look.Closed)
  }

  test("a park that comes after an arming or a close resumes at once: the standby looks again") {
    val armed = new UnsafeDeadline
    armed.arm(10)
    val wake = new Wake
    armed.park(wake)
    assertEquals(wake.calls.get, 1)
    assertEquals(armed.look(0), Look.Sleep(10))
    val closed = new UnsafeDeadline
    assert(closed.close())
    val late = new Wake
    closed.park(late)
    assertEquals(late.calls.get, 1)
  }

  test("deadlines compare by difference, so a clock near the end of the range does not wrap them") {
    val d = new UnsafeDeadline
    d.arm(Long.MaxValue - 5 + 10) // wraps to a negative number, 10 ns after `now` below
    assertEquals(d.look(Long.MaxValue - 5), Look.Sleep(10))
  }

  test("the end and the deadline racing on two threads: exactly one of them wins, every time") {
    val barrier = new CyclicBarrier(2)
    (1 to 2000).foreach { round =>
      val d = new UnsafeDeadline
      d.arm(0)
      val seen = new AtomicReference[Look]
      val standby = new Thread(() =>
        barrier.await()
        seen.set(d.look(0))
      )
      standby.start()
      barrier.await()
      val endedFirst = d.disarm()
      standby.join()
      assertEquals(seen.get, if endedFirst then Look.Park else Look.Fired, s"round $round")
      assertEquals(d.close(), endedFirst, s"round $round")
    }
  }

  test("a standby firing while the worker runs attempt after attempt fires at most one, the one it ended") {
    // every attempt's deadline is already passed: the standby fires whichever attempt it finds armed, and
    // the worker, which stops at the first attempt whose end loses, must find it is that one
    val barrier = new CyclicBarrier(2)
    (1 to 500).foreach { round =>
      val d = new UnsafeDeadline
      val fired = new AtomicInteger
      val standby = new Thread(() =>
        barrier.await()
        var done = false
        while !done do
          d.look(0) match
            case Look.Fired => fired.incrementAndGet(); done = true
            case Look.Closed => done = true
            case _ => Thread.onSpinWait()
      )
      standby.start()
      barrier.await()
      var lost = 0
      var n = 0
      while lost == 0 && n < 200 do
        d.arm(0)
        if !d.disarm() then lost += 1
        n += 1
      val closed = d.close()
      standby.join()
      assertEquals(fired.get, lost, s"round $round")
      assertEquals(closed, lost == 0, s"round $round")
    }
  }
