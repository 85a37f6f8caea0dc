package weir.internal

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}
import weir.internal.UnsafeInlet.Placed

import java.util.concurrent.CountDownLatch
import scala.collection.mutable.ArrayBuffer

/**
 * [[UnsafeInlet]] on its own, the test playing the buffer (its lock a monitor here): placements only on credit,
 * drained in order and exactly once; a close after which nothing is placed, where a placement racing it is
 * drained by the close or by the drain after the producer ended; and a placement racing a raise of `hungry`,
 * seen by the taker's look, answered `Hungry`, or drained by a later look (the buffer's recheck, whose timing
 * `TaskBufferSuite` checks), never lost.
 */
class UnsafeInletSuite extends ScalaCheckSuite:

  override def scalaCheckTestParameters = super.scalaCheckTestParameters.withMinSuccessfulTests(30)

  private def drained(inlet: UnsafeInlet[Int]): Vector[Int] = inlet.drain().toVector

  test("places only on credit, at most Slots at once; a drain returns what was placed, in order") {
    val inlet = new UnsafeInlet[Int]
    assertEquals(inlet.place(0), Placed.NoCredit)
    inlet.lend(3)
    assertEquals(
      (1 to 4).map(inlet.place).toList,
      List(Placed.Placed, Placed.Placed, Placed.Placed, Placed.NoCredit)
    )
    assert(inlet.nonEmpty)
    assertEquals(drained(inlet), Vector(1, 2, 3))
    assert(!inlet.nonEmpty)
    assertEquals(drained(inlet), Vector.empty)
    inlet.lend(UnsafeInlet.Slots)
    (0 until UnsafeInlet.Slots).foreach(i => assertEquals(inlet.place(i), Placed.Placed, s"placement $i"))
    assertEquals(drained(inlet), Vector.range(0, UnsafeInlet.Slots))
  }

  test("takeBack returns the credit not spent and leaves none") {
    val inlet = new UnsafeInlet[Int]
    inlet.lend(5)
    assertEquals(inlet.place(7), Placed.Placed)
    assertEquals(inlet.takeBack(), 4)
    assertEquals(inlet.takeBack(), 0)
    assertEquals(inlet.place(8), Placed.NoCredit)
    assertEquals(drained(inlet), Vector(7))
  }

  test("after a close nothing is placed; what was placed before it is still drained") {
    val inlet = new UnsafeInlet[Int]
    inlet.lend(4)
    assertEquals(inlet.place(1), Placed.Placed)
    inlet.close()
    assert(inlet.closed)
    assertEquals(inlet.place(2), Placed.Closed)
    assertEquals(drained(inlet), Vector(1))
    inlet.close() // idempotent
    assertEquals(drained(inlet), Vector.empty)
  }

  test("a placement that finds hungry raised says so") {
    val inlet = new UnsafeInlet[Int]
    inlet.lend(2)
    inlet.hungry = true
    assertEquals(inlet.place(1), Placed.Hungry)
    inlet.hungry = false
    assertEquals(inlet.place(2), Placed.Placed)
  }

  property("a producer placing on credit while a taker drains: every element drained once, in order") {
    Prop.forAllNoShrink(Gen.choose(1, 5000), Gen.choose(1, UnsafeInlet.Slots)) { (n, grant) =>
      val inlet = new UnsafeInlet[Int]
      val lock = new Object
      val out = ArrayBuffer.empty[Int]
      val go = new CountDownLatch(1)
      // the producer asks for credit "under the lock", after the drain and the take-back a buffer makes there
      val producer = new Thread(() =>
        go.await()
        var i = 0
        while i < n do
          inlet.place(i) match
            case Placed.Placed => i += 1
            case Placed.NoCredit =>
              lock.synchronized {
                out ++= inlet.drain().toVector
                val _ = inlet.takeBack()
                inlet.lend(grant)
              }
            case other => throw new AssertionError(s"an open inlet without hungry answers $other")
      )
      val taker = new Thread(() =>
        go.await()
        while lock.synchronized(out.size) < n do
          if inlet.nonEmpty then lock.synchronized { out ++= inlet.drain().toVector }: Unit
          else Thread.onSpinWait()
      )
      producer.start(); taker.start(); go.countDown()
      producer.join(); taker.join()
      assertEquals(out.toVector, Vector.range(0, n))
    }
  }

  property("a close racing placements: each element refused, or placed and drained once, in order") {
    Prop.forAllNoShrink(Gen.choose(0, 400)) { closeAfterSpins =>
      val inlet = new UnsafeInlet[Int]
      inlet.lend(UnsafeInlet.Slots)
      val go = new CountDownLatch(1)
      val placed = ArrayBuffer.empty[Int]
      var refusedFrom = -1
      val producer = new Thread(() =>
        go.await()
        var i = 0
        while refusedFrom < 0 && i < UnsafeInlet.Slots do
          inlet.place(i) match
            case Placed.Placed => placed += i; i += 1
            case Placed.Closed => refusedFrom = i
            case other => throw new AssertionError(s"unexpected $other")
      )
      producer.start(); go.countDown()
      var spins = 0
      while spins < closeAfterSpins do { Thread.onSpinWait(); spins += 1 }
      inlet.close()
      val atClose = drained(inlet)
      producer.join()
      val afterEnd = drained(inlet) // the buffer's collection once the producer ended
      assertEquals(atClose ++ afterEnd, placed.toVector, "every placed element drained once, in order")
      inlet.lend(1)
      assertEquals(inlet.place(-1), Placed.Closed, "closed, with credit")
      if placed.size < UnsafeInlet.Slots then assertEquals(refusedFrom, placed.size)
    }
  }

  property(
    "a placement racing a raise of hungry: seen by the look, answered Hungry, or drained later; once"
  ) {
    Prop.forAllNoShrink(Gen.choose(0, 50)) { skew =>
      (1 to 200).foreach { round =>
        val inlet = new UnsafeInlet[Int]
        inlet.lend(1)
        val go = new CountDownLatch(1)
        var answer: Placed = Placed.NoCredit
        val producer = new Thread(() =>
          go.await()
          answer = inlet.place(round)
        )
        producer.start(); go.countDown()
        var spins = 0
        while spins < skew do { Thread.onSpinWait(); spins += 1 }
        inlet.hungry = true // the taker's side: raise, then look
        val seen = drained(inlet)
        producer.join()
        val later = drained(inlet) // the recheck's look
        assert(answer == Placed.Placed || answer == Placed.Hungry, s"round $round: $answer")
        assertEquals(seen ++ later, Vector(round), s"round $round: drained once")
      }
      true
    }
  }
