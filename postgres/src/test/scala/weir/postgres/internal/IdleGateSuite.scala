package weir.postgres.internal

import cats.effect.{Deferred, IO}
import munit.CatsEffectSuite

/**
 * Who claims while the claimer is idle ([[IdleGate]]): the session only while the claimer waits, the
 * claimer alone once it resumes first, and never both.
 */
class IdleGateSuite extends CatsEffectSuite:

  test("the session claims only while the claimer waits, and the claimer then waits for its rows") {
    Deferred[IO, Sql.Claim].map { rows =>
      val gate = new IdleGate[IO]
      assertEquals(gate.sessionClaims(), None) // busy: a wake-up is enough
      gate.waiting(rows)
      assert(gate.sessionClaims().exists(_ eq rows))
      assertEquals(gate.sessionClaims(), None) // one claim per idle period
      assertEquals(gate.claimerResumes(), false) // the session's claim is under way: wait for its rows
      gate.claimerHasRows()
      assertEquals(gate.sessionClaims(), None)
    }
  }

  test("a claimer that resumes first keeps the turn: the session's notification only wakes it") {
    Deferred[IO, Sql.Claim].map { rows =>
      val gate = new IdleGate[IO]
      gate.waiting(rows)
      assertEquals(gate.claimerResumes(), true)
      assertEquals(gate.sessionClaims(), None)
      assertEquals(gate.claimerResumes(), false) // not waiting any more
    }
  }

  test("racing threads: for each idle period exactly one of the claimer and the session wins") {
    val rounds = 2000
    IO.blocking {
      val gate = new IdleGate[IO]
      var sessionWins, claimerWins = 0
      (1 to rounds).foreach { _ =>
        gate.waiting(null)
        val session = new java.util.concurrent.atomic.AtomicBoolean
        val t = new Thread(() => session.set(gate.sessionClaims().isDefined))
        t.start()
        val claimer = gate.claimerResumes()
        t.join()
        assert(claimer != session.get, s"claimer $claimer, session ${session.get}")
        if claimer then claimerWins += 1 else sessionWins += 1
        gate.claimerHasRows()
      }
      assertEquals(sessionWins + claimerWins, rounds)
    }
  }
