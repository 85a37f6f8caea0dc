package weir.internal

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

class KeyClaimsSuite extends ScalaCheckSuite:

  private def entry(seq: Long, key: Any) = Entry(seq, seq.toInt, key)

  test("the first entry of a key claims it; the next ones park behind it and are handed on in input order") {
    val claims = List(entry(0, "a"), entry(1, "a"), entry(2, "b"), entry(3, "a"))
      .foldLeft(KeyClaims.empty[Int])(_.claimOrPark(_))
    assertEquals(claims.parked, 2) // 1 and 3 behind "a"; 0 and 2 claimed their keys
    val (afterFirst, first) = (claims.advance("a"), claims.next("a"))
    val (afterSecond, second) = (afterFirst.advance("a"), afterFirst.next("a"))
    val (released, last) = (afterSecond.advance("a"), afterSecond.next("a"))
    assertEquals(List(first, second).collect { case e: Entry[Int] => e.seq }, List(1L, 3L))
    assertEquals(last, KeyReleased)
    assertEquals(released.parked, 0)
    // "a" is free again: its next entry claims it
    assertEquals(released.claimOrPark(entry(4, "a")).parked, 0)
  }

  test("releasing a key returns the entries parked behind it and frees the key") {
    val claims =
      List(entry(0, "a"), entry(1, "a"), entry(2, "a")).foldLeft(KeyClaims.empty[Int])(_.claimOrPark(_))
    val (released, behind) = claims.release(entry(0, "a"))
    assertEquals(behind.map(_.seq), List(1L, 2L))
    assertEquals(released.parked, 0)
    assertEquals(released.tasks.toList, Nil)
  }

  test("an entry whose key function failed claims nothing and never parks") {
    val failure = KeyFailure(new RuntimeException("boom"))
    val claims = KeyClaims.empty[Int].claimOrPark(entry(0, "a"))
    assert(!entry(1, failure).keyed)
    assertEquals(claims.release(entry(1, failure)), (claims, Nil))
  }

  property("every entry is claimed or parked once, and each key hands its parked entries on in input order") {
    Prop.forAll(Gen.listOf(Gen.choose(0, 4))) { keys =>
      val entries = keys.zipWithIndex.map((k, i) => entry(i.toLong, k))
      val claims = entries.foldLeft(KeyClaims.empty[Int])(_.claimOrPark(_))
      val firsts = entries.groupBy(_.key).values.map(_.head.seq).toSet
      assertEquals(claims.parked, entries.size - firsts.size)
      // drain every key through its claimant
      def drain(c: KeyClaims[Int], key: Any, got: List[Long]): (KeyClaims[Int], List[Long]) =
        c.next(key) match
          case e: Entry[Int] => drain(c.advance(key), key, e.seq :: got)
          case _ => (c.advance(key), got.reverse)
      val (end, handed) = entries.map(_.key).distinct.foldLeft((claims, Map.empty[Any, List[Long]])) {
        case ((c, acc), key) =>
          val (next, seqs) = drain(c, key, Nil)
          (next, acc.updated(key, seqs))
      }
      assertEquals(end.parked, 0)
      entries.groupBy(_.key).foreach((key, es) => assertEquals(handed(key), es.map(_.seq).tail))
    }
  }
