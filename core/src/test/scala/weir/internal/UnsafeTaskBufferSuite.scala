package weir.internal

import cats.effect.IO
import fs2.Chunk
import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

import java.util.concurrent.{ConcurrentLinkedQueue, CountDownLatch}
import java.util.concurrent.atomic.{AtomicBoolean, AtomicInteger}
import scala.jdk.CollectionConverters.*

/**
 * The plain protocol of [[UnsafeTaskBuffer]] on its own: every offered entry is taken exactly once, with
 * the input position it was offered at; an offer never fills the buffer beyond its capacity; one key's entries
 * are handed out in input order; and a call that cannot complete changes nothing. The same holds when the
 * offers are the inlet's owner's ([[UnsafeInlet]]): some lend it room, and elements placed there are taken
 * in the same order as offered ones.
 */
class UnsafeTaskBufferSuite extends ScalaCheckSuite:

  // each run of the threaded property starts four threads on a machine that may have two cores; the
  // single-threaded property checks ten scripts per run instead
  override def scalaCheckTestParameters = super.scalaCheckTestParameters.withMinSuccessfulTests(40)

  private sealed trait Op
  private final case class Offer(n: Int) extends Op
  private case object Take extends Op
  // finish the i-th held entry (mod the number held); `andTake`: take the next entry in the same step
  private final case class Finish(i: Int, andTake: Boolean) extends Op
  private final case class GiveBack(i: Int) extends Op // a cancelled taker's entry goes back
  private final case class Place(n: Int) extends Op // the owner places up to n elements in the inlet

  private def ops(capacity: Int): Gen[List[Op]] =
    Gen.listOf(
      Gen.frequency(
        3 -> Gen.choose(1, capacity + 2).map(Offer(_)),
        2 -> Gen.choose(1, capacity + 2).map(Place(_)),
        4 -> Gen.const(Take),
        3 -> Gen.zip(Gen.choose(0, 50), Gen.oneOf(false, true)).map(Finish(_, _)),
        1 -> Gen.choose(0, 50).map(GiveBack(_))
      )
    )

  private def buffer(capacity: Int, keys: Option[Int]): UnsafeTaskBuffer[IO, Int] =
    new UnsafeTaskBuffer(new BufferState[IO, Int](
      capacity,
      keys.map(k => (i: Int) => i % k),
      measured = false
    ))

  private def held(b: UnsafeTaskBuffer[IO, Int]): Int = b.held

  /** What a refused call must leave as it was: the entries held and the next input position. */
  private def snapshot(b: UnsafeTaskBuffer[IO, Int]): (Int, Int, Long) =
    b.modify(s => (s.size, s.parked, s.next))

  property("every offered entry is taken exactly once, at its input position; capacity is never exceeded") {
    val scenario =
      for
        capacity <- Gen.choose(1, 12)
        keys <- Gen.option(Gen.choose(1, 4))
        owned <- Gen.oneOf(false, true)
        script <- ops(capacity)
      yield (capacity, keys, owned, script)
    Prop.forAllNoShrink(Gen.listOfN(10, scenario))(_.foreach(run))
  }

  /**
   * Runs one script against a fresh buffer, checking the invariants after each step, then drains it. `owned`:
   * the offers are the inlet's owner's, each lending it room, which `Place` spends; otherwise `Place` finds
   * no credit.
   */
  private def run(capacity: Int, keys: Option[Int], owned: Boolean, script: List[Op]): Unit =
    val b = buffer(capacity, keys)
    var offered = 0 // tasks are 0, 1, 2, ... so a task's input position is the task itself
    var holding = Vector.empty[Entry[Int]] // taken (or handed on by a key) and not finished
    var finished = Vector.empty[Entry[Int]]
    var givenBack = 0 // entries given back by (simulated) cancelled takers

    def finish(e: Entry[Int], andTake: Boolean): Unit =
      finished :+= e
      if e.key != NoKey then
        b.tryFinishKey(e.key, andTake) match
          case next: Entry[Int] =>
            if !andTake then assertEquals(next.key, e.key) // only a take hands out another key's entry
            assertEquals(next.seq, next.task.toLong)
            holding :+= next
          case Released => ()
          case other => fail(s"no producer waits, so a key's hand-on never has to wake one: $other")

    def step(op: Op): Unit = op match
      case Offer(n) =>
        val before = snapshot(b)
        val free = capacity - held(b)
        val unserved = b.tryOffer(Chunk.from(offered until offered + n), 0L, owned, lend = owned)
        if n > free then
          assertEquals(unserved, UnsafeTaskBuffer.NoRoom)
          assertEquals(snapshot(b), before, "a refused offer changes nothing")
        else
          assertEquals(unserved, n) // no taker waits: none of the chunk was handed over
          offered += n
          if owned then
            val lent = b.modify(_.lent)
            assertEquals(lent, math.min(capacity - held(b), UnsafeInlet.Slots), "the room left is lent")
      case Place(n) =>
        var placing = true
        var placed = 0
        while placing && placed < n do
          b.inlet.place(offered) match
            case UnsafeInlet.Placed.Placed =>
              offered += 1
              placed += 1
            case UnsafeInlet.Placed.NoCredit => placing = false
            case other => fail(s"an open buffer with no taker parked answers a placement with credit: $other")
        if !owned then assertEquals(placed, 0, "no room is lent without an owner's offer")
      case Take =>
        b.tryTake() match
          case e: Entry[Int] =>
            assertEquals(e.seq, e.task.toLong)
            holding :+= e
          case Later => ()
          case other => fail(s"a plain take answers an entry or Later, not $other")
      case Finish(i, andTake) =>
        if holding.nonEmpty then
          val e = holding(i % holding.size)
          holding = holding.filterNot(_ eq e)
          finish(e, andTake)
      case GiveBack(i) =>
        if holding.nonEmpty then
          val e = holding(i % holding.size)
          holding = holding.filterNot(_ eq e)
          b.giveBack(e)

    script.foreach { op =>
      step(op)
      op match
        case GiveBack(_) => givenBack += 1
        case _ => ()
      // an offer is accepted only if all of it fits; only an entry a cancelled taker gives back can go over,
      // since its place was freed when it was handed out (one entry per cancelled taker)
      assert(held(b) <= capacity + givenBack, s"holds ${held(b)} > capacity $capacity + $givenBack after $op")
      // every accepted task is in exactly one place: in the buffer, held by the test, or finished
      assertEquals(held(b) + holding.size + finished.size, offered, s"after $op")
      // a key's entries are held one at a time
      holding.filter(_.key != NoKey).groupBy(_.key).foreach((key, es) =>
        assertEquals(es.size, 1, s"key $key after $op")
      )
    }
    // drain: finish what is held, take the rest
    var more = true
    while more do
      if holding.nonEmpty then
        val e = holding.head
        holding = holding.tail
        finish(e, andTake = e.seq % 2 == 0)
      else
        b.tryTake() match
          case e: Entry[Int] => holding :+= e
          case Later => more = false
          case other => fail(s"a plain take answers an entry or Later, not $other")
    val done = finished
    assertEquals(held(b), 0)
    assertEquals(done.map(_.task).sorted, Vector.range(0, offered))
    assertEquals(done.map(_.seq).distinct.size, offered)
    keys.foreach { k =>
      done.groupBy(_.task % k).foreach { (key, es) =>
        assertEquals(es.map(_.seq), es.map(_.seq).sorted, s"key $key out of input order")
      }
    }

  property("offering and taking from several threads at once: each entry taken once, capacity kept") {
    val scenario =
      for
        capacity <- Gen.choose(1, 16)
        keys <- Gen.option(Gen.choose(1, 8))
        owned <- Gen.oneOf(false, true)
        // the inlet's owner is the run's only producer
        chunks <- Gen.listOfN(if owned then 1 else 2, Gen.listOfN(60, Gen.choose(1, 4)))
      yield (capacity, keys, owned, chunks)
    Prop.forAllNoShrink(scenario) { (capacity, keys, owned, chunks) =>
      val b = buffer(capacity, keys)
      val sizes = chunks.map(_.map(_.min(capacity)))
      val total = sizes.map(_.sum).sum
      val taken = new ConcurrentLinkedQueue[Entry[Int]]
      val done = new AtomicInteger(0)
      val overfull = new AtomicBoolean(false)
      val go = new CountDownLatch(1)
      // producer p offers the tasks p * 1_000_000 + 0, 1, 2, ... in chunks of its sizes, retrying when full;
      // an owner places a chunk of one in the inlet while it has room lent, and each of its offers asks for more
      def offer(chunk: Chunk[Int]): Unit =
        val placed = chunk.size == 1 && owned && b.inlet.place(chunk(0)) != UnsafeInlet.Placed.NoCredit
        if !placed then
          while b.tryOffer(chunk, 0L, owned, lend = owned) == UnsafeTaskBuffer.NoRoom do Thread.`yield`()
      val producers = sizes.zipWithIndex.map { (mine, p) =>
        new Thread(() =>
          go.await()
          var next = p * 1000000
          mine.foreach { n =>
            offer(Chunk.from(next until next + n))
            if held(b) > capacity then overfull.set(true)
            next += n
          }
        )
      }
      // one consumer takes its next entry with each key's hand-on, the other takes it on its own
      val consumers = List(false, true).map(andTake =>
        new Thread(() =>
          go.await()
          while done.get < total do
            b.tryTake() match
              case e: Entry[Int] =>
                var current = e
                var chain = true
                while chain do
                  taken.add(current)
                  done.incrementAndGet()
                  if current.key == NoKey then chain = false
                  else
                    b.tryFinishKey(current.key, andTake) match
                      case next: Entry[Int] => current = next
                      case Released => chain = false
                      case other => throw new AssertionError(s"no producer waits: $other")
              case Later => Thread.`yield`()
              case other => throw new AssertionError(s"a plain take answers an entry or Later, not $other")
        )
      )
      val threads = producers ++ consumers
      threads.foreach(_.start())
      go.countDown()
      threads.foreach(_.join(20000))
      assert(threads.forall(!_.isAlive), "a thread did not finish")
      assert(!overfull.get, "the buffer held more than its capacity")
      val got = taken.asScala.toVector
      val expected = sizes.zipWithIndex.flatMap((mine, p) => (0 until mine.sum).map(p * 1000000 + _)).sorted
      assertEquals(got.map(_.task).sorted, expected.toVector)
      assertEquals(got.map(_.seq).sorted, Vector.range(0L, total.toLong))
      // one producer: input positions follow its order, whichever way each task entered
      if owned then assertEquals(got.sortBy(_.seq).map(_.task), expected.toVector)
      assertEquals(held(b), 0)
    }
  }
