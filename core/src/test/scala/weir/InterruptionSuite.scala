package weir

import munit.FunSuite

import java.util.concurrent.{CountDownLatch, Executors, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger

/**
 * The switch an interruptible task holds ([[Interruption]]): one request wins; a registration hears a
 * request made before or after it, once; an unregistered one hears nothing; racing threads never lose
 * or double a request.
 */
class InterruptionSuite extends FunSuite:

  test("the first request wins; a registration after it is told at once") {
    val i = new Interruption
    assertEquals(i.requested, None)
    assertEquals(i.request("first"), true)
    assertEquals(i.request("second"), false)
    assertEquals(i.requested, Some("first"))
    var heard = Vector.empty[String]
    i.onInterrupt(heard :+= _)()
    assertEquals(heard, Vector("first"))
  }

  test("a registration hears a later request once; an unregistered one hears nothing") {
    val i = new Interruption
    var heard = Vector.empty[String]
    val off = i.onInterrupt(heard :+= _)
    off()
    val again = i.onInterrupt(r => heard :+= s"again: $r")
    assertEquals(i.request("stop"), true)
    again()
    assertEquals(heard, Vector("again: stop"))
  }

  test(
    "racing a request against registrations on other threads: each hears it at most once, the last always"
  ) {
    val pool = Executors.newFixedThreadPool(2)
    try
      (1 to 2000).foreach { round =>
        val i = new Interruption
        val first, last = new AtomicInteger
        val start = new CountDownLatch(1)
        // one thread registers and unregisters, then registers again; the other requests
        val registrar = pool.submit(() =>
          start.await()
          i.onInterrupt(_ => first.incrementAndGet(): Unit)()
          i.onInterrupt(_ => last.incrementAndGet(): Unit)
        )
        val requester = pool.submit(() =>
          start.await()
          i.request(s"round $round")
        )
        start.countDown()
        registrar.get(10, TimeUnit.SECONDS): Unit
        assert(requester.get(10, TimeUnit.SECONDS))
        // the first heard it only if it came while it was registered; the last, registered when the race is
        // over, heard it whether it came before or after, exactly once
        assert(first.get <= 1, s"round $round: the first registration heard it ${first.get} times")
        assertEquals(last.get, 1, s"round $round")
      }
    finally pool.shutdownNow(): Unit
  }
