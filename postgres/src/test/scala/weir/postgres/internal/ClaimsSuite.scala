package weir.postgres.internal

import munit.FunSuite
import weir.{NotStartedReason, TaskOutcome, Tracked}
import weir.postgres.{Job, Schema}

import scala.concurrent.duration.*

/**
 * The worker's book of claims ([[Claims]]), without a database: what the last step hands back counted
 * (`maybeStarted`), which claims a beat may refuse as taken, and the interruption of a claim's task.
 */
class ClaimsSuite extends FunSuite:

  private val claimed = new Job.Claimed(new Sql(Schema.default), keepCompleted = false, new Liveness(1.hour))

  test("a claim may have run once its start was granted, unless the pipeline returned it unstarted") {
    val claims = new Claims
    val Vector(first, second, third) =
      Vector(1L, 2L, 3L).map(t => claims.add(t, keyed = t == 2, claimed, sentAt = 0L))
    assertEquals(claims.maybeStarted.toSet, Set.empty[Long])
    Vector(first, second, third).foreach(c => assertEquals(c.tryStart(), None))
    assertEquals(claims.maybeStarted.toSet, Set(1L, 2L, 3L))
    // refused or drained: handed back uncounted
    assert(second.done(TaskOutcome.NotStarted((), NotStartedReason.Refused("cancelled: stop"))))
    assert(third.done(TaskOutcome.Succeeded((), (), 1))) // ran
    assertEquals(claims.maybeStarted.toSet, Set(1L, 3L))
    assertEquals((claims.isKeyed(2), claims.isKeyed(1), claims.isKeyed(9)), (true, false, false))
    assertEquals((claims.finished(2), claims.finished(1), claims.finished(1)), (true, false, false))
    assertEquals(claims.tokens.toSet, Set(3L))
    assertEquals(second.state, Tracked.State.Ended(Tracked.End.Refused("cancelled: stop")))
  }

  test("a claim that never started, handed on or not, goes back uncounted") {
    val claims = new Claims
    val claim = claims.add(1, keyed = false, claimed, sentAt = 0L)
    assertEquals(claims.maybeStarted.toSet, Set.empty[Long])
    assert(claim.done(TaskOutcome.NotStarted((), NotStartedReason.Drained)))
    assertEquals(claims.maybeStarted.toSet, Set.empty[Long])
  }

  test("a beat refuses as taken only the claims whose end is not known, each once") {
    val claims = new Claims
    val held = (1L to 4L).map(t => claims.add(t, keyed = false, claimed, sentAt = 0L))
    assertEquals(held(1).tryStart(), None)
    assert(held(1).done(TaskOutcome.Succeeded((), (), 1))) // its finish may have removed the row: not taken
    assertEquals(claims.taken(List(1L, 2L, 5L)), 1) // 5 is not held at all
    assertEquals(claims.taken(List(1L, 3L)), 1) // 1 was already refused
    assertEquals(held.map(_.state.refusal.contains(Liveness.taken)), Vector(true, false, true, false))
    assertEquals(held(0).tryStart(), Some(Liveness.taken))
  }

  test("a claim's interruption is its task's: told once, refused before the start, heard by a registration") {
    val claims = new Claims
    val first = claims.add(1, keyed = false, claimed, sentAt = 0L)
    claims.add(2, keyed = false, claimed, sentAt = 0L): Unit
    assertEquals(first.tryStart(), None)
    var heard = Vector.empty[String]
    val unregister = first.onInterrupt(reason => heard :+= reason)
    assertEquals(claims.interrupt(1, "an operator's cancel"), true)
    assertEquals(claims.interrupt(1, "again"), false)
    assertEquals(claims.interrupt(7, "not held"), false)
    unregister()
    assertEquals(heard, Vector("cancelled: an operator's cancel"))
    assertEquals(first.tryStart(), Some("cancelled: an operator's cancel"))
    // a claim finished and forgotten is no longer told anything
    claims.finished(2): Unit
    assertEquals(claims.interrupt(2, "late"), false)
  }

  test(
    "a claim is due once its lease is `after` old; an extension starts it again, never earlier; the clock may wrap"
  ) {
    val claims = new Claims
    val base = Long.MaxValue - 10 // `System.nanoTime` may wrap: a lease's age is a difference
    claims.add(1, keyed = false, claimed, sentAt = base): Unit
    claims.add(2, keyed = false, claimed, sentAt = base + 30): Unit // past the wrap
    def due(now: Long) = claims.due(now, after = 40).toSet
    assertEquals(due(base + 39), Set.empty[Long])
    assertEquals(due(base + 40), Set(1L))
    assertEquals(due(base + 70), Set(1L, 2L))
    claims.extended(Array(1L, 2L, 9L), sentAt = base + 60) // 9 is not held: nothing to move
    assertEquals(due(base + 99), Set.empty[Long])
    assertEquals(due(base + 100), Set(1L, 2L))
    claims.extended(Array(1L), sentAt = base + 10) // an earlier beat's report moves no lease back
    assertEquals(due(base + 100), Set(1L, 2L))
    claims.finished(1): Unit
    assertEquals(due(base + 100), Set(2L))
  }

  test("a claim refuses to start while its worker's heartbeat is late, and stays unstarted") {
    val late = new Job.Claimed(new Sql(Schema.default), keepCompleted = false, new Liveness(1.nano))
    val claims = new Claims
    val claim = claims.add(1, keyed = false, late, sentAt = 0L)
    assert(claim.tryStart().exists(_.startsWith("this worker's last heartbeat that committed is")))
    assertEquals(claim.state, Tracked.State.HandedOn)
    assertEquals(claims.maybeStarted.toSet, Set.empty[Long])
  }
