package weir.internal

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}

class KeyClaimsSuite extends ScalaCheckSuite:
  import KeyClaims.Claims

  private def entry(seq: Long, key: Any) = Entry(seq, seq.toInt, key)

  /** Claims `e`'s key if free, else parks `e`, as the buffer's take does; with the parked count. */
  private def claimOrPark(c: (Claims[Int], Int), e: Entry[Int]): (Claims[Int], Int) =
    val (claims, parked) = c
    val queue = KeyClaims.behind(claims, e.key)
    if queue == null then (KeyClaims.claim(claims, e.key), parked)
    else (KeyClaims.park(claims, e, queue), parked + 1)

  private def handOn(claims: Claims[Int], key: Any): (Claims[Int], KeyTurn[Int]) =
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
    assertEquals(last, KeyReleased)
    assertEquals(KeyClaims.behind(released, "a"), null) // "a" is free again
    assertEquals(KeyClaims.tasks(released).toList, Nil)
  }

  test("releasing a key returns the entries parked behind it and frees the key") {
    val (claims, _) =
      List(entry(0, "a"), entry(1, "a"), entry(2, "a")).foldLeft((KeyClaims.empty[Int], 0))(claimOrPark)
    val (released, behind) = KeyClaims.release(claims, entry(0, "a"))
    assertEquals(behind.map(_.seq), List(1L, 2L))
    assertEquals(KeyClaims.behind(released, "a"), null)
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
      assertEquals(end, KeyClaims.empty[Int])
      entries.groupBy(_.key).foreach((key, es) => assertEquals(handed(key), es.map(_.seq).tail))
    }
  }
