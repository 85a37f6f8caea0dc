package weir.postgres.internal

import cats.effect.{Deferred, IO}
import cats.syntax.all.*
import munit.{CatsEffectSuite, ScalaCheckSuite}
import org.scalacheck.{Gen, Prop}

/**
 * Who claims while the claimer is idle ([[IdleGate]]): the session only while the claimer waits, the
 * claimer alone once it resumes first, and never both.
 */
class IdleGateSuite extends CatsEffectSuite with ScalaCheckSuite:

  test("the session claims only while the claimer waits, and the claimer then waits for its rows") {
    for
      gate <- IdleGate[IO]
      rows <- Deferred[IO, Sql.Claim]
      busy <- gate.sessionClaims
      _ <- gate.waiting(rows)
      first <- gate.sessionClaims
      second <- gate.sessionClaims
      resumed <- gate.resume
      _ <- gate.hasRows
      after <- gate.sessionClaims
    yield
      assertEquals(busy, None) // busy: a wake-up is enough
      assert(first.exists(_ eq rows))
      assertEquals(second, None) // one claim per idle period
      assert(resumed.exists(_ eq rows), "the session's claim is under way: the claimer waits for its rows")
      assertEquals(after, None)
  }

  test("a claimer that resumes first keeps the turn: the session's notification only wakes it") {
    for
      gate <- IdleGate[IO]
      rows <- Deferred[IO, Sql.Claim]
      _ <- gate.waiting(rows)
      resumed <- gate.resume
      session <- gate.sessionClaims
      again <- gate.resume
    yield
      assertEquals(resumed, None) // the claimer claims itself
      assertEquals(session, None)
      assertEquals(again, None) // not waiting any more: no session's rows to wait for
  }

  test("racing fibers: for each idle period exactly one of the claimer and the session wins") {
    val rounds = 2000
    IdleGate[IO].flatMap { gate =>
      (1 to rounds).toList.traverse { _ =>
        Deferred[IO, Sql.Claim].flatMap(rows =>
          gate.waiting(rows) *> IO.both(gate.sessionClaims, gate.resume).flatMap { (session, resumed) =>
            // the session won: the claimer is told to wait for the rows; the claimer won: the session got none
            assertEquals(session.isDefined, resumed.isDefined, s"session $session, claimer $resumed")
            gate.hasRows.as(session.isDefined)
          }
        )
      }
    }.map(wins => assertEquals(wins.count(identity) + wins.count(!_), rounds))
  }

  test("the transitions, on every turn: only a waiting claimer's turn is taken, by whoever comes first") {
    val rows = Deferred.unsafe[IO, Sql.Claim]
    val other = Deferred.unsafe[IO, Sql.Claim]
    val turns =
      Vector(IdleGate.Turn.Busy[IO](), IdleGate.Turn.Waiting(rows), IdleGate.Turn.SessionClaiming(rows))
    val events = Vector(
      IdleGate.Event.Waits(other),
      IdleGate.Event.ClaimerResumes[IO](),
      IdleGate.Event.ClaimerHasRows[IO](),
      IdleGate.Event.SessionClaims[IO]()
    )
    val table = for turn <- turns; event <- events yield (turn, event) -> IdleGate.step(turn, event)
    val expected = Vector(
      // Busy
      (IdleGate.Turn.Waiting(other), None),
      (IdleGate.Turn.Busy[IO](), None),
      (IdleGate.Turn.Busy[IO](), None),
      (IdleGate.Turn.Busy[IO](), None),
      // Waiting(rows)
      (IdleGate.Turn.Waiting(other), None),
      (IdleGate.Turn.Busy[IO](), None),
      (IdleGate.Turn.Busy[IO](), None),
      (IdleGate.Turn.SessionClaiming(rows), Some(rows)),
      // SessionClaiming(rows)
      (IdleGate.Turn.Waiting(other), None),
      (IdleGate.Turn.SessionClaiming(rows), Some(rows)),
      (IdleGate.Turn.Busy[IO](), None),
      (IdleGate.Turn.SessionClaiming(rows), None)
    )
    assertEquals(table.map(_._2), expected)
  }

  property("in every idle period exactly one of the claimer and the session claims, whatever the order") {
    // per period: notifications while the claimer is busy, while it waits, and after it resumed
    val count = Gen.chooseNum(0, 3)
    Prop.forAll(Gen.listOf(Gen.zip(count, count, count))) { periods =>
      var turn: IdleGate.Turn[IO] = IdleGate.Turn.Busy()
      def move(event: IdleGate.Event[IO]): Option[Deferred[IO, Sql.Claim]] =
        val (next, rows) = IdleGate.step(turn, event)
        turn = next
        rows
      periods.foreach { (busy, waiting, resumed) =>
        val rows = Deferred.unsafe[IO, Sql.Claim]
        val early = (1 to busy).count(_ => move(IdleGate.Event.SessionClaims()).isDefined)
        move(IdleGate.Event.Waits(rows)): Unit
        val bySession = (1 to waiting).flatMap(_ => move(IdleGate.Event.SessionClaims()))
        val toWaitFor = move(IdleGate.Event.ClaimerResumes())
        val late = (1 to resumed).count(_ => move(IdleGate.Event.SessionClaims()).isDefined)
        assertEquals(early + late, 0, "the session claimed while the claimer did not wait")
        assertEquals(bySession.size + (if toWaitFor.isEmpty then 1 else 0), 1, "claims in one idle period")
        // the claimer waits for the rows of the session's claim of this very period
        assertEquals(toWaitFor.map(_ eq rows), bySession.headOption.map(_ eq rows))
        if toWaitFor.isDefined then move(IdleGate.Event.ClaimerHasRows()): Unit
      }
    }
  }
