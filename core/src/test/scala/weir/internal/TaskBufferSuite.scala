package weir.internal

import cats.effect.{IO, Ref}
import cats.effect.testkit.TestControl
import cats.syntax.all.*
import fs2.Chunk
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}

import scala.concurrent.duration.*

class TaskBufferSuite extends CatsEffectSuite with ScalaCheckSuite:

  private def offer(b: TaskBuffer[IO, Int], c: Chunk[Int], demand: Int => IO[Unit] = _ => IO.unit) =
    IO.uncancelable(poll => b.offer(poll, c, demand, _ => IO.unit))
  private def fastTaken(t: Handout[Int]): Option[(Long, Int)] = t match
    case e: Entry[Int] => Some((e.seq, e.task))
    case Later => None
    case other => fail(s"a plain take answers an entry or Later, not $other")

  private def take(b: TaskBuffer[IO, Int]) =
    IO.uncancelable(poll => b.take(poll)).map(_.map(e => (e.seq, e.task)))

  test("elements come out first in, first out, numbered by input position") {
    for
      b <- TaskBuffer[IO, Int](10)
      _ <- offer(b, Chunk(7, 8, 9))
      _ <- offer(b, Chunk(10))
      got <- take(b).replicateA(4)
    yield assertEquals(got.flatten, List(0L -> 7, 1L -> 8, 2L -> 9, 3L -> 10))
  }

  test("a chunk larger than the buffer asks for workers before it waits for room") {
    val run =
      for
        b <- TaskBuffer[IO, Int](2)
        demanded <- Ref.of[IO, Int](0)
        producer <- offer(b, Chunk.from(0 until 5), n => demanded.update(_ + n)).start
        _ <- IO.sleep(1.second)
        asked <- demanded.get
        size <- b.size
        got <- take(b).replicateA(5)
        _ <- producer.joinWithNever
      yield (asked, size, got.flatten.map(_._2))
    TestControl.executeEmbed(run).map { (asked, size, got) =>
      assertEquals(asked, 2) // the two elements it could store, before waiting
      assertEquals(size, 2) // never more than the capacity
      assertEquals(got, List(0, 1, 2, 3, 4))
    }
  }

  test("a producer waiting with one element is woken once half the buffer is free, not at the first place") {
    val run =
      for
        b <- TaskBuffer[IO, Int](4)
        _ <- offer(b, Chunk(0, 1, 2, 3))
        producer <- offer(b, Chunk(4)).start
        _ <- IO.sleep(1.second)
        first <- take(b)
        _ <- IO.sleep(1.second)
        sizeAfterOne <- b.size // the producer still waits: one free place is not half of four
        second <- take(b)
        _ <- producer.joinWithNever
        sizeAfterTwo <- b.size // woken at two free places, it stored its element
        rest <- take(b).replicateA(3)
      yield (first, sizeAfterOne, second, sizeAfterTwo, rest.flatten)
    TestControl.executeEmbed(run).map { (first, sizeAfterOne, second, sizeAfterTwo, rest) =>
      assertEquals(first, Some(0L -> 0))
      assertEquals(sizeAfterOne, 3)
      assertEquals(second, Some(1L -> 1))
      assertEquals(sizeAfterTwo, 3)
      assertEquals(rest, List(2L -> 2, 3L -> 3, 4L -> 4))
    }
  }

  test("a waiting taker receives the next offer directly") {
    for
      b <- TaskBuffer[IO, Int](4)
      taker <- take(b).start
      _ <- IO.cede.replicateA_(10)
      _ <- offer(b, Chunk(42))
      got <- taker.joinWithNever
      size <- b.size
    yield
      assertEquals(got, Some(0L -> 42))
      assertEquals(size, 0)
  }

  property("a spinning taker cancelled at any point of its spin leaves no element held back for it") {
    // the first taker spins on the empty buffer (one spinner at most), the second parks; the first is
    // cancelled after `steps` cedes of the test's fiber, spinning or parked by then; an element offered after
    // reaches the parked one (an element left for a spinner that is gone would stay in the buffer)
    Prop.forAll(Gen.choose(0, 40)) { steps =>
      val run =
        for
          b <- TaskBuffer[IO, Int](4)
          spinner <- take(b).start
          parked <- take(b).start
          _ <- IO.cede.replicateA_(steps)
          _ <- spinner.cancel
          _ <- IO.sleep(1.second)
          _ <- offer(b, Chunk(42))
          got <- parked.joinWithNever
          left <- b.size
        yield (got, left)
      TestControl.executeEmbed(run).map(assertEquals(_, (Some(0L -> 42), 0))).unsafeRunSync()
    }
  }

  test("a burst wakes one parked taker, and each woken taker wakes the next as it resumes") {
    val run =
      for
        b <- TaskBuffer[IO, Int](10)
        takers <- take(b).start.replicateA(3)
        _ <- IO.sleep(1.second) // all three parked (the first after its spins)
        parked <- b.waitingTakers
        _ <- offer(b, Chunk.from(0 until 5))
        // no fiber ran since the offer: it handed one element over and left the rest in the buffer
        afterOffer <- b.waitingTakers
        sizeAfterOffer <- b.size
        got <- takers.traverse(_.joinWithNever)
        left <- b.size
      yield (parked, afterOffer, sizeAfterOffer, got.flatten, left)
    TestControl.executeEmbed(run).map { (parked, afterOffer, sizeAfterOffer, got, left) =>
      assertEquals(parked, 3)
      assertEquals(afterOffer, 2)
      assertEquals(sizeAfterOffer, 4)
      assertEquals(got.sorted, List(0L -> 0, 1L -> 1, 2L -> 2)) // the chain reached every parked taker
      assertEquals(left, 2)
    }
  }

  property("the wake chain serves every parked taker an element it can claim, in input order") {
    // takers that keep the key they claimed: after the chain settles, as many are served as there are
    // distinct keys among the elements (or takers), each with its key's first element, the others parked
    val gen =
      for
        takers <- Gen.choose(1, 12)
        keys <- Gen.choose(1, 6)
        chunks <- Gen.listOf(Gen.choose(1, 8)).map(_.take(4))
      yield (takers, keys, chunks)
    Prop.forAll(gen) { (takers, keys, chunks) =>
      val n = chunks.sum
      val run =
        for
          b <- TaskBuffer[IO, Int](64, keyOf = Some((i: Int) => i % keys))
          fibers <- take(b).start.replicateA(takers)
          _ <- IO.sleep(1.second)
          _ <- chunks.scanLeft(0)(_ + _).zip(chunks).traverse_((from, size) =>
            offer(b, Chunk.from(from until from + size)) *> IO.sleep(1.second)
          )
          waiting <- b.waitingTakers
          _ <- b.stop
          got <- fibers.traverse(_.join.flatMap(_.embedNever)).map(_.flatten)
        yield (waiting, got)
      val (waiting, got) = TestControl.executeEmbed(run).unsafeRunSync()
      locally {
        val firsts = (0 until n).groupBy(_ % keys).values.map(_.min).toList.sorted
        val served = math.min(takers, firsts.size)
        assertEquals(got.map(_._2).sorted, firsts.take(served))
        assertEquals(got.map(_._1).sorted, firsts.take(served).map(_.toLong))
        assertEquals(waiting, takers - served)
      }
    }
  }

  test(
    "the fast take hands out elements in order and leaves to the slow take the one that wakes a producer"
  ) {
    val run =
      for
        b <- TaskBuffer[IO, Int](4)
        producer <- offer(b, Chunk.from(0 until 10)).start
        _ <- IO.sleep(1.second) // the producer stored 0..3 and waits for two free places (half the buffer)
        first <- IO(b.unsafe.tryTake()).map(fastTaken)
        second <- IO(b.unsafe.tryTake()).map(fastTaken)
        third <- take(b) // frees the second place: wakes the producer
        rest <- take(b).replicateA(7)
        _ <- producer.joinWithNever
        size <- b.size
      yield (first, second, third, rest.flatten, size)
    TestControl.executeEmbed(run).map { (first, second, third, rest, size) =>
      assertEquals(first, Some(0L -> 0))
      assertEquals(second, None) // taking it would have to wake the producer: not the fast path's job
      assertEquals(third, Some(1L -> 1))
      assertEquals(rest, (2 until 9).map(i => i.toLong -> i).toList)
      assertEquals(size, 1)
    }
  }

  test("close: takers drain what is left, then get None") {
    for
      b <- TaskBuffer[IO, Int](4)
      _ <- offer(b, Chunk(1, 2))
      _ <- b.close
      got <- take(b).replicateA(3)
      finished <- b.isFinished
    yield
      assertEquals(got.map(_.map(_._2)), List(Some(1), Some(2), None))
      assert(finished)
  }

  test("stop: offers are refused and everything held is returned by remaining") {
    for
      b <- TaskBuffer[IO, Int](4)
      _ <- offer(b, Chunk(1, 2, 3))
      _ <- b.stop
      refused <- offer(b, Chunk(4, 5))
      t <- take(b)
      left <- b.remaining
    yield
      assertEquals(refused.toList, List(4, 5))
      assertEquals(t, None)
      assertEquals(left, Vector(1, 2, 3))
  }

  test("stop wakes a producer waiting for room, which gets its rest back") {
    val run =
      for
        b <- TaskBuffer[IO, Int](2)
        producer <- offer(b, Chunk(1, 2, 3, 4)).start
        _ <- IO.sleep(1.second)
        _ <- b.stop
        refused <- producer.joinWithNever
        left <- b.remaining
      yield (refused.toList, left)
    TestControl.executeEmbed(run).map((refused, left) =>
      assertEquals((refused, left), (List(3, 4), Vector(1, 2)))
    )
  }

  test("a cancelled producer hands the elements it still held to onCancel") {
    val run =
      for
        b <- TaskBuffer[IO, Int](2)
        lost <- Ref.of[IO, List[Int]](Nil)
        producer <-
          IO.uncancelable(poll => b.offer(poll, Chunk(1, 2, 3), _ => IO.unit, c => lost.set(c.toList))).start
        _ <- IO.sleep(1.second)
        _ <- producer.cancel
        held <- lost.get
        left <- b.remaining
      yield (held, left)
    TestControl.executeEmbed(run).map((held, left) => assertEquals((held, left), (List(3), Vector(1, 2))))
  }

  test("producers get room first come, first served: a later offer waits behind a waiting producer") {
    val run =
      for
        b <- TaskBuffer[IO, Int](4)
        _ <- offer(b, Chunk(0, 1, 2, 3))
        first <- offer(b, Chunk(10, 11)).start // waits: the buffer is full
        _ <- IO.sleep(1.second)
        _ <- take(b) // one free place: not the half of four the first producer waits for
        late <- IO(b.unsafe.tryOffer(Chunk(20), 0L)) // it would fit, but a producer waits
        second <- offer(b, Chunk(20)).start
        _ <- IO.sleep(1.second)
        // a tick after each take, so that each woken producer appends before the next place is freed
        got <- (take(b) <* IO.sleep(1.second)).replicateA(6)
        _ <- (first.joinWithNever, second.joinWithNever).tupled
      yield (late, got.flatten.map(_._2))
    TestControl.executeEmbed(run).map { (late, got) =>
      assertEquals(late, UnsafeTaskBuffer.NoRoom)
      assertEquals(got, List(1, 2, 3, 10, 11, 20))
    }
  }

  test("a woken producer that still cannot place its chunk keeps its place ahead of later ones") {
    val run =
      for
        b <- TaskBuffer[IO, Int](4)
        _ <- offer(b, Chunk(0, 1, 2, 3))
        first <- offer(b, Chunk(10, 11, 12, 13, 14, 15)).start // waits for two free places, and again
        _ <- IO.sleep(1.second)
        second <- offer(b, Chunk(20)).start // queues behind it
        _ <- IO.sleep(1.second)
        got <- (take(b) <* IO.sleep(1.second)).replicateA(11)
        _ <- (first.joinWithNever, second.joinWithNever).tupled
      yield got.flatten.map(_._2)
    TestControl.executeEmbed(run).map(got => assertEquals(got, List(0, 1, 2, 3, 10, 11, 12, 13, 14, 15, 20)))
  }

  test(
    "producers are woken one at a time: two places freed in one instant, they append in the order they queued"
  ) {
    // the two takes free both places in the same instant; the second must not wake the second producer
    // while the first, woken by the first take, has yet to append (which of them would run first is the
    // test runtime's draw)
    val run =
      for
        b <- TaskBuffer[IO, Int](2)
        _ <- offer(b, Chunk(0, 1))
        first <- offer(b, Chunk(10)).start
        _ <- IO.sleep(1.second)
        second <- offer(b, Chunk(20)).start
        _ <- IO.sleep(1.second)
        freed <- take(b).replicateA(2)
        _ <- IO.sleep(1.second)
        got <- take(b).replicateA(2)
        _ <- (first.joinWithNever, second.joinWithNever).tupled
      yield (freed ++ got).flatten.map(_._2)
    List.fill(20)(TestControl.executeEmbed(run)).sequence.map(runs =>
      runs.foreach(got => assertEquals(got, List(0, 1, 10, 20)))
    )
  }

  property("producers arriving one at a time get their chunks in whole, in the order they arrived") {
    // Producer p offers its chunk at p + 0.5 s; the consumer takes at quarter past a second, after random
    // pauses. No arrival shares an instant with a take, nor with the wake-ups a take causes, so the order is
    // the buffer's alone: whatever the capacity, the sizes and the pauses, the elements come out as the
    // chunks in arrival order, none of a later producer's before all of an earlier one's.
    val scenarios =
      for
        capacity <- Gen.choose(1, 8)
        sizes <- Gen.choose(2, 6).flatMap(n => Gen.listOfN(n, Gen.choose(1, 12)))
        pauses <- Gen.listOfN(sizes.sum, Gen.choose(0, 2))
      yield (capacity, sizes, pauses)
    Prop.forAllNoShrink(scenarios) { (capacity, sizes, pauses) =>
      val chunks = sizes.zipWithIndex.map((n, p) => Chunk.from(p * 100 until p * 100 + n))
      val toQuarterPast = IO.monotonic.map(t => ((1250 - t.toMillis % 1000) % 1000).millis)
      val run =
        for
          b <- TaskBuffer[IO, Int](capacity)
          _ <-
            chunks.zipWithIndex.traverse_((c, p) => (IO.sleep((p * 1000 + 500).millis) *> offer(b, c)).start)
          got <- pauses.traverse(pause =>
            IO.sleep(pause.seconds) *> toQuarterPast.flatMap(IO.sleep) *> take(b).map(_.map(_._2))
          )
        yield got
      val got = TestControl.executeEmbed(run).unsafeRunSync()
      assertEquals(got.flatten, chunks.flatMap(_.toList))
    }
  }

  test("many producers through a small buffer, some cancelled: each element is taken or handed back, once") {
    // on the real runtime, many times over: no producer is left waiting for room that no one will free (the
    // joins below would hang), and first-come-first-served room loses and doubles nothing
    val once =
      for
        b <- TaskBuffer[IO, Int](4)
        offered <- Ref.of[IO, List[Int]](Nil)
        handedBack <- Ref.of[IO, List[Int]](Nil)
        taken <- Ref.of[IO, List[Int]](Nil)
        consumer <- take(b)
          .flatMap {
            case Some((_, task)) => taken.update(task :: _).as(true)
            case None => b.isFinished.map(!_)
          }
          .iterateWhile(identity)
          .start
        producers <- (0 until 8).toList.traverse { p =>
          // a producer cancelled before its fiber runs offers nothing: what counts is what was offered
          val chunk = Chunk.from(p * 10 until p * 10 + 5)
          IO.uncancelable(poll =>
            offered.update(chunk.toList ::: _) *>
              b.offer(poll, chunk, _ => IO.unit, c => handedBack.update(c.toList ::: _))
          ).start
        }
        _ <- IO.cede.replicateA_(3)
        _ <- producers(1).cancel *> producers(5).cancel
        _ <- producers.traverse_(_.join)
        _ <- b.close
        _ <- consumer.joinWithNever
        all <- (taken.get, handedBack.get).mapN(_ ++ _)
        expected <- offered.get
      yield assertEquals(all.sorted, expected.sorted)
    once.replicateA_(300)
  }

  test("a cancelled taker loses nothing: an element handed to it goes back to the head") {
    // on the real runtime, many times over: the hand-over and the cancellation race on two threads, through
    // both offers (the effectful one and the producer's plain fast path)
    def once(fast: Boolean) =
      for
        b <- TaskBuffer[IO, Int](4)
        takers <- take(b).start.replicateA(3)
        _ <- IO.cede.replicateA_(10)
        offered =
          if fast then
            IO(b.unsafe.tryOffer(Chunk(1, 2, 3), 0L)).map(r => assert(r != UnsafeTaskBuffer.NoRoom))
          else offer(b, Chunk(1, 2, 3))
        _ <- (offered, takers.traverse_(_.cancel)).parTupled
        outcomes <- takers.traverse(_.join)
        won <- outcomes.traverse(_.fold(IO.pure(Option.empty[(Long, Int)]), _ => IO.pure(None), identity))
        _ <- b.stop
        left <- b.remaining
      yield
        // every element is either with a taker that completed, or back in the buffer: none is lost or doubled
        val all = won.flatten.map(_._2) ++ left
        assertEquals(all.sorted, List(1, 2, 3))
    List(false, true).traverse_(fast => once(fast).replicateA_(300))
  }

  test("the buffer never holds more than its capacity (random offers and takes)") {
    val run =
      for
        b <- TaskBuffer[IO, Int](5)
        peak <- Ref.of[IO, Int](0)
        sizes = (0 until 40).map(i => i % 7 + 1)
        producer <- sizes.toList.traverse_(n => offer(b, Chunk.from(0 until n))).start
        watcher <- (b.size.flatMap(s => peak.update(math.max(_, s))) *> IO.sleep(1.milli)).foreverM.start
        got <- (IO.sleep(2.millis) *> take(b)).replicateA(sizes.sum).map(_.flatten)
        _ <- producer.cancel *> watcher.cancel
        max <- peak.get
      yield (max, got.map(_._1))
    TestControl.executeEmbed(run).map { (max, positions) =>
      assert(max <= 5, s"held $max > 5")
      assertEquals(positions, positions.indices.map(_.toLong).toList)
    }
  }

  /**
   * A buffer of `capacity` whose inlet's owner offered one element and was lent the room left then (`capacity
   * - 1`); the element is taken, so the buffer is empty.
   */
  private def lent(capacity: Int): IO[TaskBuffer[IO, Int]] =
    TaskBuffer[IO, Int](capacity).flatTap { b =>
      IO(b.unsafe.tryOffer(Chunk(-1), 0L, owner = true, lend = true)).map(r => assertEquals(r, 1)) *>
        IO(fastTaken(b.unsafe.tryTake())).map(t => assertEquals(t, Some(0L -> -1)))
    }

  test("inlet: with takers parked and none spinning, each placement says so, and serving hands it to one") {
    val run =
      for
        b <- lent(10)
        takers <- take(b).start.replicateA(3)
        _ <- IO.sleep(1.second) // all three parked (the spinners after their looks)
        parked <- b.waitingTakers
        first <- IO(b.unsafe.inlet.place(1))
        _ <- IO(b.unsafe.serve())
        afterServe <- b.waitingTakers
        second <- IO(b.unsafe.inlet.place(2))
        _ <- IO(b.unsafe.serve())
        third <- IO(b.unsafe.inlet.place(3))
        _ <- IO(b.unsafe.serve())
        got <- takers.traverse(_.joinWithNever)
        last <- IO(b.unsafe.inlet.place(4)) // no taker parked any more
        left <- b.remaining
      yield (parked, List(first, second, third, last), afterServe, got.flatten, left)
    TestControl.executeEmbed(run).map { (parked, placements, afterServe, got, left) =>
      import UnsafeInlet.Placed.*
      assertEquals(parked, 3)
      assertEquals(placements, List(Hungry, Hungry, Hungry, Placed))
      assertEquals(afterServe, 2)
      assertEquals(got.sorted, List(1L -> 1, 2L -> 2, 3L -> 3)) // input positions follow the offered one
      assertEquals(left, Vector(4))
    }
  }

  test("inlet: a taker that parks finds what was placed before it looked; nothing is left behind") {
    val run =
      for
        b <- lent(10)
        placed <- IO(List(1, 2).map(b.unsafe.inlet.place))
        got <- take(b).replicateA(2)
        size <- b.size
      yield (placed, got.flatten, size)
    TestControl.executeEmbed(run).map { (placed, got, size) =>
      assertEquals(placed, List(UnsafeInlet.Placed.Placed, UnsafeInlet.Placed.Placed))
      assertEquals(got, List(1L -> 1, 2L -> 2))
      assertEquals(size, 0)
    }
  }

  test(
    "inlet: room lent counts against the capacity, and the owner's next offer takes back what it did not use"
  ) {
    for
      b <- lent(4) // lent 3, the room left once the element offered was in; its take freed one more
      _ <- IO(b.unsafe.tryOffer(Chunk(9, 10), 0L)).map(r =>
        assertEquals(r, UnsafeTaskBuffer.NoRoom, "one place is free, three are lent")
      )
      placed <- IO((1 to 5).toList.map(b.unsafe.inlet.place))
      size <- b.size
      refused <- IO(b.unsafe.tryOffer(Chunk(6, 7), 0L, owner = true, lend = false))
      accepted <- IO(b.unsafe.tryOffer(Chunk(6), 0L, owner = true, lend = false))
      all <- IO((1 to 4).toList.map(_ => fastTaken(b.unsafe.tryTake())))
    yield
      import UnsafeInlet.Placed.*
      assertEquals(placed, List(Placed, Placed, Placed, NoCredit, NoCredit))
      assertEquals(size, 3)
      assertEquals(refused, UnsafeTaskBuffer.NoRoom)
      assertEquals(accepted, 1)
      assertEquals(all.flatten, List(1L -> 1, 2L -> 2, 3L -> 3, 4L -> 6))
  }

  test(
    "inlet: stop closes it; what was placed before is returned by remaining, later placements are refused"
  ) {
    for
      b <- lent(8)
      _ <- IO(b.unsafe.inlet.place(1))
      _ <- b.stop
      late <- IO(b.unsafe.inlet.place(2))
      left <- b.remaining
    yield
      assertEquals(late, UnsafeInlet.Placed.Closed)
      assertEquals(left, Vector(1))
  }

  test("inlet: a placement that missed hungry (its store seen late) is found by the recheck, 20 µs on") {
    val run =
      for
        b <- lent(10)
        // a worker's take: woken to look again, it takes again
        taker <-
          take(b).flatMap(got => if got.isEmpty then take(b).map((true, _)) else IO.pure((false, got))).start
        _ <- IO.sleep(1.micro) // parked after its looks at 0: hungry raised, the recheck armed
        parked <- b.waitingTakers
        // a producer whose read of hungry came before the raise reached it: it placed and serves nobody
        placed <- IO {
          val inlet = b.unsafe.inlet
          inlet.hungry = false
          try inlet.place(1)
          finally inlet.hungry = true
        }
        got <- taker.joinWithNever
        at <- IO.monotonic
      yield (parked, placed, got, at)
    // woken by the recheck, not handed the entry: the recheck hands nothing over
    TestControl.executeEmbed(run).map(assertEquals(
      _,
      (1, UnsafeInlet.Placed.Placed, (true, Some(1L -> 1)), 20.micros)
    ))
  }

  test("inlet: stop cancels a recheck under way, so the buffer leaves no fiber behind") {
    val run =
      for
        b <- lent(10)
        taker <- take(b).start
        _ <- IO.sleep(1.micro) // parked at 0: the recheck armed, asleep until 20 µs
        _ <- b.stop
        got <- taker.joinWithNever
      yield got
    for
      control <- TestControl.execute(run)
      _ <- control.tick
      _ <- control.advanceAndTick(1.micro)
      result <- control.results
      next <- control.nextInterval // the time to the next timer: none left
    yield
      assertEquals(result.map(_.isSuccess), Some(true))
      assertEquals(next, Duration.Zero)
  }

  test("the recheck is armed once per raise while takers starve and places are lent, one at a time") {
    val s = new BufferState[IO, Int](10, None, measured = false)
    val taker = new UnsafeTaker[Int](_ => (), _ => ())
    s.takers.append(taker)
    s.raise()
    assert(!s.armRecheck(), "no place lent: the producer can place nothing")
    s.lower()
    s.lent = 1
    s.spinning = 1
    s.raise()
    assert(!s.armRecheck(), "a spinner looks: nobody starves")
    s.spinning = 0
    assert(s.armRecheck(), "takers parked, none spinning, hungry raised")
    assert(!s.armRecheck(), "armed once")
    s.raise() // raised already: no new race
    assert(!s.armRecheck())
    s.lower()
    s.raise()
    assert(!s.armRecheck(), "one recheck under way at a time")
    val _ = s.recheck // its transition: finds nothing to hand out (its effect, nothing to run), and is over
    assert(s.armRecheck(), "the raise since the last arming")
    s.lower()
    assert(!s.armRecheck(), "lowered: nothing due")
  }

  test("inlet: a lone taker that parks after its spins is served the next placement") {
    val run =
      for
        b <- lent(10)
        taker <- take(b).start
        _ <- IO.sleep(1.second) // parked after its looks: no spinner left, and it raised `hungry` itself
        parked <- b.waitingTakers
        placed <- IO(b.unsafe.inlet.place(1))
        _ <- IO(b.unsafe.serve())
        got <- taker.joinWithNever
      yield (parked, placed, got)
    TestControl.executeEmbed(run).map(assertEquals(_, (1, UnsafeInlet.Placed.Hungry, Some(1L -> 1))))
  }
