package weir.internal

import cats.effect.IO
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}

import scala.concurrent.duration.*

class InboxSuite extends CatsEffectSuite with ScalaCheckSuite:

  private def channel(capacity: Int) = IO(Inbox.unsafe[IO, Int](capacity))

  test("outcomes come out in the order written, each read as one chunk of what waited") {
    for
      c <- channel(8)
      written <- IO((1 to 3).map(c.trySend).toList)
      chunks <- c.stream.chunks.map(_.toList).take(1).compile.toList
      _ <- IO(c.trySend(4)) *> c.close
      rest <- c.stream.compile.toList
    yield
      assertEquals(written, List(true, true, true))
      assertEquals(chunks, List(List(1, 2, 3)))
      assertEquals(rest, List(4))
  }

  test("a full channel refuses the plain write, and a send waits until the reader takes what waited") {
    val run =
      for
        c <- channel(2)
        plain <- IO(List(c.trySend(1), c.trySend(2), c.trySend(3)))
        writer <- c.send(3).start
        _ <- IO.sleep(1.second)
        waitingAfter <- writer.join.timeoutTo(1.second, IO.pure(null)).map(_ == null)
        first <- c.stream.chunks.map(_.toList).take(1).compile.lastOrError
        _ <- writer.joinWithNever
        _ <- c.close
        second <- c.stream.compile.toList
      yield (plain, waitingAfter, first, second)
    TestControl.executeEmbed(run).map { (plain, waitingAfter, first, second) =>
      assertEquals(plain, List(true, true, false))
      assert(waitingAfter, "the send did not wait for room")
      assertEquals(first, List(1, 2))
      assertEquals(second, List(3))
    }
  }

  test("closing wakes a waiting reader, which ends, and a waiting writer, whose outcome is dropped") {
    val run =
      for
        empty <- channel(1)
        reader <- empty.stream.compile.toList.start
        full <- channel(1)
        _ <- IO(full.trySend(1))
        writer <- full.send(2).start
        _ <- IO.sleep(1.second)
        _ <- empty.close *> full.close
        read <- reader.joinWithNever
        _ <- writer.joinWithNever
        after <- IO(full.trySend(3))
        left <- full.stream.compile.toList
      yield (read, after, left)
    TestControl.executeEmbed(run).map { (read, after, left) =>
      assertEquals(read, Nil)
      assert(after, "a write after the close is dropped, not refused")
      assertEquals(left, List(1))
    }
  }

  test("a writer cancelled while it waits for room leaves the others' wake-ups intact") {
    val run =
      for
        c <- channel(1)
        _ <- IO(c.trySend(0))
        cancelled <- c.send(1).start
        kept <- c.send(2).start
        _ <- IO.sleep(1.second)
        _ <- cancelled.cancel
        got <- c.stream.take(2).compile.toList
        _ <- kept.joinWithNever
      yield got
    TestControl.executeEmbed(run).map(got => assertEquals(got, List(0, 2)))
  }

  // small ones keep writers waiting for room; larger ones let what waits outgrow the inbox's first array
  private val capacities =
    Gen.frequency(3 -> Gen.choose(1, 16), 1 -> Gen.choose(17, 1000), 1 -> Gen.const(Int.MaxValue))

  test("what waits outgrows the first array: a thousand plain writes read back as one chunk, in order") {
    for
      c <- channel(Int.MaxValue)
      written <- IO((1 to 1000).map(c.trySend).forall(identity))
      first <- c.stream.chunks.map(_.toList).take(1).compile.lastOrError
      _ <- IO(c.trySend(1001)) *> c.close
      rest <- c.stream.compile.toList
    yield
      assert(written)
      assertEquals(first, (1 to 1000).toList)
      assertEquals(rest, List(1001))
  }

  property("concurrent writers through a small channel: every outcome read once, each writer's in order") {
    Prop.forAllNoShrink(Gen.choose(1, 4), Gen.listOfN(4, Gen.choose(0, 300)), capacities) {
      (writers, counts, capacity) =>
        val sizes = counts.take(writers)
        val run =
          for
            c <- channel(capacity)
            read <- c.stream.compile.toList.start
            _ <- sizes.zipWithIndex.parTraverse_((n, w) =>
              (0 until n).toList.traverse_(i => c.send(w * 1000 + i))
            )
            _ <- c.close
            got <- read.joinWithNever
          yield got
        // a lost wake-up leaves the reader waiting: it fails here instead of hanging the suite
        val got = run.timeout(10.seconds).unsafeRunSync()
        assertEquals(got.size, sizes.sum)
        sizes.zipWithIndex.foreach((n, w) =>
          assertEquals(got.filter(_ / 1000 == w), (0 until n).map(w * 1000 + _).toList)
        )
    }
  }
