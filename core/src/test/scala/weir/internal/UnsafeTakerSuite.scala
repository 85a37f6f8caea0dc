package weir.internal

import java.util.concurrent.atomic.AtomicInteger
import java.util.concurrent.{CountDownLatch, Executors, TimeUnit}

/**
 * [[UnsafeTaker]]'s settlement, with its three parties racing on two threads, many times: whatever the
 * interleaving, an entry handed over reaches the waiting fiber or goes back to the buffer, never both and
 * never neither, and the callback is called once at most.
 */
class UnsafeTakerSuite extends munit.FunSuite:

  private final class Seen:
    val received = new AtomicInteger // callbacks with the entry
    val lookedAgain = new AtomicInteger // callbacks with None
    val givenBack = new AtomicInteger
    def taker: UnsafeTaker[Int] =
      new UnsafeTaker[Int](
        {
          case Right(Some(_)) => received.incrementAndGet(): Unit
          case _ => lookedAgain.incrementAndGet(): Unit
        },
        _ => givenBack.incrementAndGet(): Unit
      )

  private val entry = new Entry[Int](1L, 1, NoKey)
  private val rounds = 5000

  /** Runs `a` and `b` on two threads, released together, `rounds` times, checking each round with `check`. */
  private def race(a: UnsafeTaker[Int] => Unit, b: UnsafeTaker[Int] => Unit)(check: Seen => Unit): Unit =
    val pool = Executors.newFixedThreadPool(2)
    try
      (1 to rounds).foreach { _ =>
        val seen = new Seen
        val taker = seen.taker
        val go = new CountDownLatch(1)
        val done = new CountDownLatch(2)
        List(a, b).foreach(act =>
          pool.execute(() =>
            go.await()
            act(taker)
            done.countDown()
          )
        )
        go.countDown()
        assert(done.await(10, TimeUnit.SECONDS), "a party of the race never finished")
        check(seen)
      }
    finally pool.shutdownNow(): Unit

  test("an entry handed to a taker that gives up at that instant goes back once, whoever came first") {
    race(_.handOver(entry), _.abandon()) { seen =>
      // the fiber that gave up receives nothing, even when its callback was called first
      assertEquals(seen.givenBack.get, 1)
      assert(seen.received.get <= 1, seen.received.get)
      assertEquals(seen.lookedAgain.get, 0)
    }
  }

  test(
    "an entry and a wake-up racing: the callback is called once, and an entry it did not carry goes back"
  ) {
    race(_.handOver(entry), _.lookAgain()) { seen =>
      assertEquals(seen.received.get + seen.lookedAgain.get, 1)
      assertEquals(seen.givenBack.get, seen.lookedAgain.get)
    }
  }

  test("a wake-up and a give-up racing: nothing is handed, the callback is called once at most") {
    race(_.lookAgain(), _.abandon()) { seen =>
      assertEquals(seen.givenBack.get, 0)
      assertEquals(seen.received.get, 0)
      assert(seen.lookedAgain.get <= 1, seen.lookedAgain.get)
    }
  }

  test("in sequence: a taker served once ignores what comes after") {
    val seen = new Seen
    val taker = seen.taker
    taker.handOver(entry)
    taker.lookAgain()
    taker.handOver(entry)
    assertEquals((seen.received.get, seen.lookedAgain.get, seen.givenBack.get), (1, 0, 1))
    val gaveUp = new Seen
    val abandoned = gaveUp.taker
    abandoned.abandon()
    abandoned.lookAgain()
    abandoned.handOver(entry)
    assertEquals((gaveUp.received.get, gaveUp.lookedAgain.get, gaveUp.givenBack.get), (0, 0, 1))
  }
