package weir.internal

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

import java.util.concurrent.CountDownLatch

class UnsafeStripedCounterSuite extends ScalaCheckSuite:

  /** Runs `adds(t)` on thread `t`, all threads released at once; true if every one finished. */
  private def onThreads(adds: Seq[() => Unit]): Boolean =
    val go = new CountDownLatch(1)
    val threads = adds.map(add => new Thread(() => { go.await(); add() }))
    threads.foreach(_.start())
    go.countDown()
    threads.foreach(_.join(60000))
    threads.forall(!_.isAlive)

  property("the sum is every add, whatever the threads, their number and the amounts") {
    // up to twice as many threads as cells, so that some threads share a cell
    val gen = Gen.listOfN(
      UnsafeStripedCounter.Cells * 2,
      Gen.listOf(Gen.choose(-1000L, 1000L))
    ).flatMap(perThread => Gen.choose(1, perThread.size).map(perThread.take))
    Prop.forAll(gen) { perThread =>
      val counter = new UnsafeStripedCounter
      assert(
        onThreads(perThread.map(amounts => () => amounts.foreach(counter.add))),
        "a thread did not finish"
      )
      assertEquals(counter.sum, perThread.flatten.sum)
    }
  }

  test("two threads counting a hundred thousand each: two hundred thousand, none lost") {
    val counter = new UnsafeStripedCounter
    val count = () => (1 to 100000).foreach(_ => counter.increment())
    assert(onThreads(Seq(count, count)), "a thread did not finish")
    assertEquals(counter.sum, 200000L)
  }

  test("a new counter sums to zero; one thread's adds are read back by another") {
    val counter = new UnsafeStripedCounter
    assertEquals(counter.sum, 0L)
    assert(onThreads(Seq(() => counter.add(41), () => counter.increment())), "a thread did not finish")
    assertEquals(counter.sum, 42L)
  }
