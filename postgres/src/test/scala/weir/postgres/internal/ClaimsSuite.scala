package weir.postgres.internal

import fs2.Chunk
import munit.FunSuite

/**
 * The worker's book of claims ([[Claims]]), without a database: what the last step hands back counted
 * (`maybeStarted`), which claims a beat may mark taken, and the interruption of a claim's task.
 */
class ClaimsSuite extends FunSuite:

  test("a claim may have started once handed on, until the pipeline returns it unstarted") {
    val claims = new Claims
    claims.add(1, keyed = false): Unit
    claims.add(2, keyed = true): Unit
    claims.add(3, keyed = false): Unit
    assertEquals(claims.maybeStarted.toSet, Set.empty[Long])
    claims.handedOn(Chunk(1L, 2L, 3L))
    assertEquals(claims.maybeStarted.toSet, Set(1L, 2L, 3L))
    claims.finishing(2, notStarted = true) // refused or drained: handed back uncounted
    claims.finishing(3, notStarted = false) // ran
    assertEquals(claims.maybeStarted.toSet, Set(1L, 3L))
    assertEquals((claims.isKeyed(2), claims.isKeyed(1), claims.isKeyed(9)), (true, false, false))
    assertEquals((claims.remove(2), claims.remove(1), claims.remove(1)), (true, false, false))
    assertEquals(claims.tokens.toSet, Set(3L))
  }

  test("a beat marks taken only the claims whose finish did not remove them, each once") {
    val claims = new Claims
    (1L to 4L).foreach(t => claims.add(t, keyed = false): Unit)
    claims.finishing(2, notStarted = false) // its finish removed the row: not taken
    assertEquals(claims.taken(List(1L, 2L, 5L)), 1) // 5 is not held at all
    assertEquals(claims.taken(List(1L, 3L)), 1) // 1 was already marked
    assertEquals((1L to 4L).map(claims.isTaken), Vector(true, false, true, false))
  }

  test("a claim's interruption is its task's: told once, refused before the start, heard by a registration") {
    val claims = new Claims
    val first = claims.add(1, keyed = false)
    claims.add(2, keyed = false): Unit
    var heard = Vector.empty[String]
    val unregister = first.onInterrupt(reason => heard :+= reason)
    assertEquals(claims.interrupt(1, "an operator's cancel"), true)
    assertEquals(claims.interrupt(1, "again"), false)
    assertEquals(claims.interrupt(7, "not held"), false)
    unregister()
    assertEquals(heard, Vector("an operator's cancel"))
    assertEquals(first.requested, Some("an operator's cancel"))
    // a claim finished and removed is no longer told anything
    claims.remove(2): Unit
    assertEquals(claims.interrupt(2, "late"), false)
  }
