package weir.internal

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

class KeyClaimsSuite extends ScalaCheckSuite:
  import KeyClaims.Claims

  private def entry(seq: Long, key: Any) = Entry(seq, seq.toInt, key)

  /** Claims `e`'s key if free, else parks `e`, as the buffer's take does; with the parked count. */
  private def claimOrPark(c: (Claims[Int], Int), e: Entry[Int]): (Claims[Int], Int) =
    val (claims, parked) = c
    KeyClaims.behind(claims, e.key) match
      case None => (KeyClaims.claim(claims, e.key), parked)
      case Some(queue) => (KeyClaims.park(claims, e, queue), parked + 1)

  private def handOn(claims: Claims[Int], key: Any): (Claims[Int], Handout[Int]) =
    val turn = KeyClaims.next(claims, key)
    (KeyClaims.advance(claims, key, turn), turn)

  test("the first entry of a key claims it; the next ones park behind it and are handed on in input order") {
    val (claims, parked) = List(entry(0, "a"), entry(1, "a"), entry(2, "b"), entry(3, "a"))
      .foldLeft((KeyClaims.empty[Int], 0))(claimOrPark)
    assertEquals(parked, 2) // 1 and 3 behind "a"; 0 and 2 claimed their keys
    val (afterFirst, first) = handOn(claims, "a")
    val (afterSecond, second) = handOn(afterFirst, "a")
    val (released, last) = handOn(afterSecond, "a")
    assertEquals(List(first, second).collect { case e: Entry[Int] => e.seq }, List(1L, 3L))
    assertEquals(last, Released)
    assertEquals(KeyClaims.behind(released, "a"), None) // "a" is free again
    assertEquals(KeyClaims.tasks(released).toList, Nil)
  }

  test("releasing a key returns the entries parked behind it and frees the key") {
    val (claims, _) =
      List(entry(0, "a"), entry(1, "a"), entry(2, "a")).foldLeft((KeyClaims.empty[Int], 0))(claimOrPark)
    val (released, behind) = KeyClaims.release(claims, entry(0, "a"))
    assertEquals(behind.map(_.seq), List(1L, 2L))
    assertEquals(KeyClaims.behind(released, "a"), None)
  }

  test("an entry whose key function failed claims nothing and never parks") {
    val failure = KeyFailure(new RuntimeException("boom"))
    val (claims, _) = claimOrPark((KeyClaims.empty[Int], 0), entry(0, "a"))
    assert(!entry(1, failure).keyed)
    assertEquals(KeyClaims.release(claims, entry(1, failure)), (claims, Nil))
  }

  property("every entry is claimed or parked once, and each key hands its parked entries on in input order") {
    Prop.forAll(Gen.listOf(Gen.choose(0, 4))) { keys =>
      val entries = keys.zipWithIndex.map((k, i) => entry(i.toLong, k))
      val (claims, parked) = entries.foldLeft((KeyClaims.empty[Int], 0))(claimOrPark)
      val firsts = entries.groupBy(_.key).values.map(_.head.seq).toSet
      assertEquals(parked, entries.size - firsts.size)
      def drain(c: Claims[Int], key: Any, got: List[Long]): (Claims[Int], List[Long]) =
        handOn(c, key) match
          case (next, e: Entry[Int]) => drain(next, key, e.seq :: got)
          case (next, _) => (next, got.reverse)
      val (end, handed) = entries.map(_.key).distinct.foldLeft((claims, Map.empty[Any, List[Long]])) {
        case ((c, acc), key) =>
          val (next, seqs) = drain(c, key, Nil)
          (next, acc.updated(key, seqs))
      }
      assertEquals(end.count, 0)
      assertEquals(KeyClaims.tasks(end).toList, Nil)
      entries.groupBy(_.key).foreach((key, es) => assertEquals(handed(key), es.map(_.seq).tail))
    }
  }

  property(
    "claims agree with a map of claimed keys, however many keys come and go (the table grows and shrinks)"
  ) {
    // each step: the entry of a key (claimed if free, else parked), or a hand-on of the claimed key it picks;
    // mostly entries first, up to some hundred keys claimed at once, then mostly hand-ons
    def step(entries: Int, handOns: Int) =
      Gen.frequency(entries -> Gen.choose(0, 300).map(Left(_)), handOns -> Gen.choose(0, 1000).map(Right(_)))
    val scenario =
      for
        n <- Gen.choose(0, 400)
        growing <- Gen.listOfN(n, step(4, 1))
        shrinking <- Gen.listOfN(n, step(1, 4))
      yield growing ++ shrinking
    // keys of three types: a `Long` key equals the `Int` of the same value, as in a `Map`; a `Colliding` key
    // shares its hash with others it does not equal
    def keyOf(k: Int): Any = if k % 3 == 0 then k.toLong else if k % 3 == 1 then Colliding(k) else k
    Prop.forAllNoShrink(scenario) { steps =>
      var claims = KeyClaims.empty[Int]
      var parked = 0
      var model = Map.empty[Any, Vector[Long]] // claimed key -> seqs parked behind it
      steps.zipWithIndex.foreach { (step, seq) =>
        step match
          case Left(k) =>
            val key = keyOf(k)
            val (next, more) = claimOrPark((claims, parked), entry(seq.toLong, key))
            claims = next
            parked = more
            model = model.updated(key, model.get(key).fold(Vector.empty[Long])(_ :+ seq.toLong))
          case Right(i) =>
            if model.nonEmpty then
              val key = model.keys.toVector.sortBy(_.toString).apply(i % model.size)
              val to = keyOf(i % 300)
              if model(key).isEmpty && i % 2 == 0 && (to == key || !model.contains(to)) then
                // done with a key with nothing parked, its claimant takes an entry of a free key
                claims = KeyClaims.handOver(claims, key, to)
                model = (model - key).updated(to, Vector.empty)
              else
                val (next, turn) = handOn(claims, key)
                claims = next
                model(key) match
                  case first +: rest =>
                    assertEquals(turn.asInstanceOf[Entry[Int]].seq, first)
                    parked -= 1
                    model = model.updated(key, rest)
                  case _ =>
                    assertEquals(turn, Released)
                    model = model - key
        // the table follows the claims down as well as up: its size is bounded by the keys claimed now
        val b = claims.buckets.length
        assert(b == 8 || b * b <= 32 * claims.count, s"$b buckets for ${claims.count} claims")
      }
      assertEquals(claims.count, model.size)
      assertEquals(parked, model.values.map(_.size).sum)
      // looked up as an `Int`, whether claimed as an `Int` or as a `Long`
      (0 to 300).foreach { k =>
        assertEquals(KeyClaims.behind(claims, k).map(_.map(_.seq).toVector), model.get(k), s"key $k")
      }
      assertEquals(KeyClaims.tasks(claims).toList.sorted, model.values.flatten.map(_.toInt).toList.sorted)
    }
  }

  /** A key whose hash many others share: the claims tell them apart by `equals`. */
  private final case class Colliding(n: Int):
    override def hashCode: Int = n % 7
