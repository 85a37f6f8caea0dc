package weir.internal

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

class UnsafeKeyClaimsSuite extends ScalaCheckSuite:

  private def entry(seq: Long, key: Any) = Entry(seq, seq.toInt, key)

  /** Claims `e`'s key if free, else parks `e`, as the buffer's take does; true when it parked. */
  private def claimOrPark(claims: UnsafeKeyClaims[Int], e: Entry[Int]): Boolean =
    if claims.tryClaim(e.key) then false
    else
      claims.park(e)
      true

  /** What the claimant of `key` gets next, as the buffer's hand-on does: a parked entry, or the key released. */
  private def next(claims: UnsafeKeyClaims[Int], key: Any): Held[Int] =
    claims.nextParked(key) match
      case e: Entry[Int] => e
      case NoTask =>
        claims.unclaim(key)
        NoTask

  private def claimed(entries: List[Entry[Int]]): (UnsafeKeyClaims[Int], Int) =
    val claims = new UnsafeKeyClaims[Int]
    (claims, entries.count(claimOrPark(claims, _)))

  private def parkedBehind(claims: UnsafeKeyClaims[Int], key: Any): Option[Vector[Long]] =
    if !claims.isClaimed(key) then None
    else
      // read by releasing and re-claiming: the only way to look at a queue without handing it on
      val behind = claims.release(entry(-1, key))
      assert(claims.tryClaim(key))
      behind.foreach(claims.park)
      Some(behind.map(_.seq).toVector)

  test("the first entry of a key claims it; the next ones park behind it and are handed on in input order") {
    val (claims, parked) = claimed(List(entry(0, "a"), entry(1, "a"), entry(2, "b"), entry(3, "a")))
    assertEquals(parked, 2) // 1 and 3 behind "a"; 0 and 2 claimed their keys
    val first = next(claims, "a")
    val second = next(claims, "a")
    val last = next(claims, "a")
    assertEquals(List(first, second).collect { case e: Entry[Int] => e.seq }, List(1L, 3L))
    assertEquals(last, NoTask)
    assert(!claims.isClaimed("a")) // "a" is free again
    assert(claims.isClaimed("b"))
    assertEquals(claims.tasks.toList, Nil)
  }

  test("releasing a key returns the entries parked behind it and frees the key") {
    val (claims, _) = claimed(List(entry(0, "a"), entry(1, "a"), entry(2, "a")))
    assertEquals(claims.release(entry(0, "a")).map(_.seq), List(1L, 2L))
    assert(!claims.isClaimed("a"))
    assertEquals(claims.count, 0)
  }

  test("an entry whose key function failed claims nothing and never parks") {
    val failure = KeyFailure(new RuntimeException("boom"))
    val (claims, _) = claimed(List(entry(0, "a")))
    assert(!entry(1, failure).keyed)
    assertEquals(claims.release(entry(1, failure)), Nil)
    assertEquals(claims.count, 1)
  }

  test(
    "a claim is taken only when the key is free; looking behind a key with nothing parked changes nothing"
  ) {
    val (claims, _) = claimed(List(entry(0, "a")))
    assert(!claims.tryClaim("a"))
    assertEquals(claims.count, 1)
    assertEquals(claims.nextParked("a"), NoTask)
    assert(claims.isClaimed("a"))
    assert(claims.tryClaim("b"))
    claims.unclaim("a")
    assert(!claims.isClaimed("a"))
    assert(claims.isClaimed("b"))
    assertEquals(claims.count, 1)
  }

  property("every entry is claimed or parked once, and each key hands its parked entries on in input order") {
    Prop.forAll(Gen.listOf(Gen.choose(0, 4))) { keys =>
      val entries = keys.zipWithIndex.map((k, i) => entry(i.toLong, k))
      val (claims, parked) = claimed(entries)
      val firsts = entries.groupBy(_.key).values.map(_.head.seq).toSet
      assertEquals(parked, entries.size - firsts.size)
      def drain(key: Any, got: List[Long]): List[Long] =
        next(claims, key) match
          case e: Entry[Int] => drain(key, e.seq :: got)
          case NoTask => got.reverse
      val handed = entries.map(_.key).distinct.map(key => key -> drain(key, Nil)).toMap
      assertEquals(claims.count, 0)
      assertEquals(claims.tasks.toList, Nil)
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
      val claims = new UnsafeKeyClaims[Int]
      var parked = 0
      var model = Map.empty[Any, Vector[Long]] // claimed key -> seqs parked behind it
      steps.zipWithIndex.foreach { (step, seq) =>
        step match
          case Left(k) =>
            val key = keyOf(k)
            if claimOrPark(claims, entry(seq.toLong, key)) then parked += 1
            model = model.updated(key, model.get(key).fold(Vector.empty[Long])(_ :+ seq.toLong))
          case Right(i) =>
            if model.nonEmpty then
              val key = model.keys.toVector.sortBy(_.toString).apply(i % model.size)
              val to = keyOf(i % 300)
              if model(key).isEmpty && i % 2 == 0 && (to == key || !model.contains(to)) then
                // done with a key with nothing parked, its claimant takes an entry of a free key
                // as the buffer's take does: the free key claimed first, then the other released
                if to != key then
                  assert(claims.tryClaim(to), s"$to was free")
                  claims.unclaim(key)
                model = (model - key).updated(to, Vector.empty)
              else
                val turn = next(claims, key)
                model(key) match
                  case first +: rest =>
                    assertEquals(turn.asInstanceOf[Entry[Int]].seq, first)
                    parked -= 1
                    model = model.updated(key, rest)
                  case _ =>
                    assertEquals(turn, NoTask)
                    model = model - key
        // the table follows the claims down as well as up: its size is bounded by the keys claimed now
        assert(claims.slots >= 2 * claims.count, s"${claims.slots} slots for ${claims.count} claims")
        assert(
          claims.slots == 16 || claims.slots <= 16 * claims.count,
          s"${claims.slots} slots for ${claims.count} claims"
        )
      }
      assertEquals(claims.count, model.size)
      assertEquals(parked, model.values.map(_.size).sum)
      // looked up as an `Int`, whether claimed as an `Int` or as a `Long`
      (0 to 300).foreach(k => assertEquals(parkedBehind(claims, k), model.get(k), s"key $k"))
      assertEquals(claims.tasks.toList.sorted, model.values.flatten.map(_.toInt).toList.sorted)
    }
  }

  /** A key whose hash many others share: the claims tell them apart by `equals`. */
  private final case class Colliding(n: Int):
    override def hashCode: Int = n % 7
