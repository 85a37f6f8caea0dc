package weir.internal

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}
import weir.StopReason

import scala.concurrent.duration.*

class RunEndSuite extends ScalaCheckSuite:
  import RunEnd.{Action, Event, Phase, Request, State}

  private val requests: Gen[Request] =
    Gen.zip(
      Gen.oneOf(
        Gen.const(StopReason.Drained),
        Gen.const(StopReason.FailedFast(new RuntimeException("boom")))
      ),
      Gen.choose(0L, 5L).map(_.seconds)
    ).map(Request(_, _))

  private val events: Gen[Event] = Gen.frequency(
    3 -> requests.map(Event.Requested(_)),
    3 -> Gen.const(Event.SourcesEnded),
    3 -> Gen.const(Event.WorkersLeft),
    2 -> Gen.const(Event.DeadlinePassed),
    2 -> Gen.const(Event.Killed),
    1 -> Gen.choose(0L, 5L).map(g => Event.Release(g.seconds))
  )

  private val sequences: Gen[List[Event]] = Gen.choose(0, 20).flatMap(Gen.listOfN(_, events))

  /** Each step of `events` from the initial state: the state before, the event, the state after, the action. */
  private def trace(events: List[Event]): List[(State, Event, State, Action)] =
    events
      .foldLeft((RunEnd.initial, List.empty[(State, Event, State, Action)])) { case ((s, acc), e) =>
        val (next, action) = RunEnd.step(s, e)
        (next, (s, e, next, action) :: acc)
      }
      ._2
      .reverse

  private def finishes(t: List[(State, Event, State, Action)]) =
    t.collect { case (_, _, _, a: Action.Finish) => a }

  private def conducts(t: List[(State, Event, State, Action)]) = t.collect {
    case (_, _, _, Action.Conduct(r)) => r
    case (_, _, _, Action.Release(Some(r))) => r
  }

  property(
    "each terminal action happens once at most: the end, the conductor, the kill, the release, the wind"
  ) {
    Prop.forAll(sequences) { events =>
      val t = trace(events)
      assert(finishes(t).sizeIs <= 1, t)
      assert(conducts(t).sizeIs <= 1, t)
      assert(t.count(_._4.isInstanceOf[Action.Kill]) <= 1, t)
      assert(t.count(_._4.isInstanceOf[Action.Release]) <= 1, t)
      assert(t.count(_._4 == Action.Wind) <= 1, t)
    }
  }

  property("the end comes only when nothing is left: the sources ended and no worker is left") {
    Prop.forAll(sequences) { events =>
      trace(events).foreach {
        case (_, _, after, Action.Finish(_)) =>
          assert(after.sourcesDone && after.workersGone, after)
          assert(after.phase.isInstanceOf[Phase.Ended], after)
        case (_, _, after, _) =>
          assert(!(after.sourcesDone && after.workersGone) || after.phase.isInstanceOf[Phase.Ended], after)
      }
    }
  }

  property("a natural end needs the sources' end and the workers' exit, and no request before them") {
    Prop.forAll(sequences) { events =>
      val t = trace(events)
      t.zipWithIndex.foreach {
        case ((_, _, _, Action.Finish(None)), i) =>
          val before = events.take(i + 1)
          assert(before.contains(Event.SourcesEnded) && before.contains(Event.WorkersLeft), before)
          assert(
            !before.exists(e => e.isInstanceOf[Event.Requested] || e.isInstanceOf[Event.Release]),
            before
          )
        case _ => ()
      }
    }
  }

  property("the first request is the one the run ends with; a request after it changes nothing") {
    Prop.forAll(sequences) { events =>
      val t = trace(events)
      val first = conducts(t).headOption
      finishes(t).foreach(f => assertEquals(f.request, first))
      t.foreach {
        case (before @ State(Phase.Stopping(_, _), _, _, _), Event.Requested(_), after, action) =>
          assertEquals(after, before) // drain after stop changes nothing
          assertEquals(action, Action.StopTaking)
        case (before @ State(Phase.Ended(_), _, _, _), e, after, action) =>
          assertEquals(after.phase, before.phase) // nothing after the end changes how it ended
          if e.isInstanceOf[Event.Requested] then assertEquals(action, Action.Nothing)
          assert(!action.isInstanceOf[Action.Conduct] && !action.isInstanceOf[Action.Kill], action)
        case _ => ()
      }
    }
  }

  property("a kill comes only from a stop's deadline, and interrupts only what has not ended") {
    Prop.forAll(sequences) { events =>
      val t = trace(events)
      t.zipWithIndex.foreach {
        case ((before, e, _, Action.Kill(workers, producers)), i) =>
          assertEquals(e, Event.DeadlinePassed)
          assert(conducts(t.take(i)).nonEmpty, t)
          assertEquals(workers, !before.workersGone)
          assertEquals(producers, !before.sourcesDone)
        case _ => ()
      }
    }
  }

  property(
    "every run ends: a stop's deadline and its kill end it, as the sources' end and the workers' exit do"
  ) {
    Prop.forAll(sequences, Gen.oneOf(true, false)) { (events, stop) =>
      val ending =
        if stop then List(Event.Release(1.second), Event.DeadlinePassed, Event.Killed)
        else List(Event.SourcesEnded, Event.WorkersLeft)
      val t = trace(events ++ ending)
      assert(t.last._3.phase.isInstanceOf[Phase.Ended], t)
      assertEquals(finishes(t).size, 1)
    }
  }

  test("a run that ends on its own: the sources end (the pool is armed), then the last worker leaves") {
    val t = trace(List(Event.SourcesEnded, Event.WorkersLeft, Event.WorkersLeft, Event.Release(1.second)))
    assertEquals(t.map(_._4), List(Action.Wind, Action.Finish(None), Action.Nothing, Action.Release(None)))
  }

  test("a drain: conducted, the workers leave, the sources end, and the end carries the drain") {
    val drain = Request(StopReason.Drained, 5.seconds)
    val t = trace(
      List(
        Event.Requested(drain),
        Event.WorkersLeft,
        Event.Requested(drain),
        Event.SourcesEnded,
        Event.DeadlinePassed
      )
    )
    assertEquals(
      t.map(_._4),
      List(
        Action.Conduct(drain),
        Action.Nothing,
        Action.StopTaking,
        Action.Finish(Some(drain)),
        Action.Nothing
      )
    )
  }

  test("a release whose grace runs out kills what is left, and the kill ends the run") {
    val released = Request(StopReason.Released, 1.second)
    val t = trace(List(Event.Release(1.second), Event.SourcesEnded, Event.DeadlinePassed, Event.Killed))
    assertEquals(
      t.map(_._4),
      List(
        Action.Release(Some(released)),
        Action.Nothing,
        Action.Kill(workers = true, producers = false),
        Action.Finish(Some(released))
      )
    )
  }

  test("why a run ended: a fail-fast wins over a failed source, which wins over a drain") {
    val boom = new RuntimeException("boom")
    val failFast = StopReason.FailedFast(boom)
    assertEquals(RunEnd.reason(Some(failFast), List(new RuntimeException("source"))), failFast)
    val first = new RuntimeException("first")
    val second = new RuntimeException("second")
    assertEquals(RunEnd.reason(Some(StopReason.Drained), List(second, first)), StopReason.SourceFailed(first))
    assertEquals(first.getSuppressed.toList, List(second))
    assertEquals(RunEnd.reason(Some(StopReason.Drained), Nil), StopReason.Drained)
    assertEquals(RunEnd.reason(None, Nil), StopReason.Completed)
  }
