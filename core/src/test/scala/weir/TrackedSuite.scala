package weir

import munit.ScalaCheckSuite
import org.scalacheck.{Gen, Prop}
import weir.Tracked.{End, State, Stop}
import weir.TrackedParties.{Control, Sent}

import java.util.concurrent.{CyclicBarrier, Executors, TimeUnit}

/**
 * The life of a tracked item ([[Tracked]]): any interleaving of the events its parties send (the engine's
 * starts and registrations, the source's refusals, interruptions and hand-backs, the reader's outcome and
 * the writer's finish) ends in exactly one final state, nothing moves an item out of it, and whoever wins a
 * race is told so, and the loser too. Then the races themselves, on two threads.
 */
class TrackedSuite extends ScalaCheckSuite:

  // an interleaving runs in microseconds: many of them
  override def scalaCheckTestParameters = super.scalaCheckTestParameters.withMinSuccessfulTests(2000)

  private val controls: Gen[List[Control]] =
    Gen.choose(0, 4).flatMap(n =>
      Gen.listOfN(
        n,
        Gen.oneOf(
          Gen.const(Control.HandBack),
          Gen.oneOf("taken", "revoked").map(Control.Refuse(_)),
          Gen.oneOf("cancelled", "grace spent").map(Control.Interrupt(_))
        )
      )
    )

  private val attempts: Gen[List[Boolean]] =
    Gen.choose(1, 3).flatMap(n => Gen.listOfN(n, Gen.oneOf(true, false)))

  /** Runs the parties in the order `schedule` picks, then any that are left, checking each step. */
  private def run(parties: TrackedParties, schedule: List[Int]): Unit =
    var choices = schedule
    var going = true
    var steps = 0
    while going do
      val before = parties.item.state
      going = parties.step(choices.headOption.getOrElse(0))
      choices = choices.drop(1)
      steps += 1
      assert(steps < 100, s"no end after 100 steps: ${parties.log.mkString("\n")}")
      val after = parties.item.state
      before match
        case State.Ended(_) => assertEquals(after, before, "an event moved an ended item")
        case State.Ending(how) => assert(after == before || after == State.Ended(how), s"$before -> $after")
        case _ => ()

  private def granted(log: Iterable[Sent], event: String): Vector[Int] =
    log.collect {
      case Sent(at, "engine", `event`, None, _) => at
    }.toVector

  property("any interleaving ends in exactly one final state, and each race's winner and loser are told") {
    Prop.forAllNoShrink(attempts, controls, Gen.listOfN(40, Gen.choose(0, 3))) { (tries, sent, schedule) =>
      val parties = new TrackedParties(tries, sent)
      run(parties, schedule)
      val log = parties.log
      val clue = log.mkString("\n")
      val outcome = parties.outcome.getOrElse(fail(s"the engine gave no outcome\n$clue"))
      val how = parties.item.state match
        case State.Ended(how) => how
        case other => fail(s"not ended: $other\n$clue")
      assertEquals(parties.finishes, 1, clue)

      // one end: the outcome's, or the hand-back's when it came first
      val handedBack = log.exists(s => s.event == "hand back" && s.answer == true)
      assertEquals(parties.doneWon.contains(true), !handedBack, clue)
      if handedBack then assertEquals(how, End.HandedBack, clue)
      else assertEquals(how, End.of(outcome), clue)

      // a start and a stop (or hand-back) before it: the first decides whether the item runs here
      val starts = granted(log, "start")
      val firstStart = starts.headOption
      log.foreach { s =>
        val beforeStart = firstStart.forall(s.at < _)
        s.answer match
          case Stop.BeforeStart => assert(firstStart.isEmpty, s"a start after $s\n$clue")
          case Stop.InAttempt | Stop.BetweenAttempts => assert(!beforeStart, s"$s found no start\n$clue")
          case Stop.TooLate =>
            assert(s.before.isInstanceOf[State.Ending] || s.before.isInstanceOf[State.Ended], s"$s\n$clue")
          case true if s.event == "hand back" => assert(firstStart.isEmpty, s"a start after $s\n$clue")
          case _ => ()
      }

      // after a stop that took, no start is granted; after an interruption, no registration either
      log.filter(s =>
        s.party == "source" &&
          (s.answer == Stop.InAttempt || s.answer == Stop.BetweenAttempts ||
            s.answer == Stop.BeforeStart)
      ).foreach { s =>
        assert(starts.forall(_ < s.at), s"a start after $s\n$clue")
        if s.event.startsWith("interrupt") then
          val registered = log.collect {
            case Sent(at, "engine", "register" | "register wait", None, _) if at > s.at => at
          }
          assert(registered.isEmpty, s"a registration after $s\n$clue")
      }

      // an interruption that found a registration stops that attempt or wait: the engine sees it interrupted
      log.filter(s =>
        s.event.startsWith("interrupt") &&
          (s.before.isInstanceOf[State.Attempting] || s.before.isInstanceOf[State.Waiting])
      ).foreach { s =>
        val next = log.find(e => e.at > s.at && (e.event == "attempt ended" || e.event == "wait ended"))
        assertEquals(next.map(_.answer), Some(false), s"$s did not stop its registration\n$clue")
      }

      // an attempt or wait the engine saw interrupted was stopped by an interruption or a refusal it found
      val stopped = log.exists(s =>
        s.party == "engine" && (s.answer == false || (s.event.startsWith("register") && s.answer != None))
      )
      if stopped then assert(log.exists(_.party == "source"), clue)
      true
    }
  }

  test("a final state takes no event") {
    val events = List(
      Tracked.Event.Start,
      Tracked.Event.Register(_ => ()),
      Tracked.Event.Refuse("r"),
      Tracked.Event.Interrupt("i"),
      Tracked.Event.HandBack,
      Tracked.Event.Done(End.Ran),
      Tracked.Event.Finish
    )
    List(End.Ran, End.HandedBack, End.Interrupted("x"), End.Refused("y")).foreach { how =>
      val ended = State.Ended(how)
      events.foreach(e => assertEquals(Tracked.transition(ended, e).next, ended, s"$e moved $ended"))
    }
  }

  /** Runs `a` and `b` at once on two threads, `rounds` times, each round on a fresh item. */
  private def race[A, B](rounds: Int)(
      a: Tracked => A,
      b: Tracked => B
  )(check: (Tracked, A, B) => Unit): Unit =
    val pool = Executors.newFixedThreadPool(2)
    try
      (1 to rounds).foreach { _ =>
        val item = new Tracked
        val barrier = new CyclicBarrier(2)
        val fa = pool.submit(() => { barrier.await(); a(item) })
        val fb = pool.submit(() => { barrier.await(); b(item) })
        check(item, fa.get(10, TimeUnit.SECONDS), fb.get(10, TimeUnit.SECONDS))
      }
    finally pool.shutdownNow(): Unit

  test("a start racing a refusal on another thread: exactly one wins, and both are told which") {
    race(2000)(_.start(), _.refuse("revoked")) { (item, start, refuse) =>
      (start, refuse) match
        case (None, Stop.InAttempt) => assertEquals(item.state, State.Started(Some("revoked")))
        case (Some("revoked"), Stop.BeforeStart) => assert(!item.state.mayHaveRun)
        case other => fail(s"both or neither won: $other")
    }
  }

  test("an outcome racing a hand-back on another thread: exactly one decides the end") {
    val drained = TaskOutcome.NotStarted((), NotStartedReason.Drained)
    val ran = TaskOutcome.Succeeded((), (), 1)
    race(2000)(_.done(ran), _.handBack()) { (item, done, handedBack) =>
      assertEquals(done, !handedBack)
      assertEquals(item.state, State.Ending(if done then End.Ran else End.HandedBack))
    }
    race(500)(_.done(drained), _.handBack())((item, done, handedBack) =>
      assertEquals((done ^ handedBack, item.state), (true, State.Ending(End.HandedBack)))
    )
  }

  test("an interruption racing the end of an attempt: the registration hears it only if it came first") {
    val pool = Executors.newFixedThreadPool(2)
    try
      (1 to 2000).foreach { _ =>
        val item = new Tracked
        val heard = new java.util.concurrent.atomic.AtomicInteger
        assertEquals(item.start(), None)
        val unregister = item.onInterrupt(_ => heard.incrementAndGet(): Unit)
        val barrier = new CyclicBarrier(2)
        val interrupting = pool.submit(() => { barrier.await(); item.interrupt("stop") })
        val ending = pool.submit[Unit](() => { barrier.await(); unregister() })
        val found = interrupting.get(10, TimeUnit.SECONDS)
        ending.get(10, TimeUnit.SECONDS): Unit
        found match
          case Stop.InAttempt => assertEquals(heard.get, 1)
          case Stop.BetweenAttempts => assertEquals(heard.get, 0)
          case other => fail(s"unexpected: $other")
        assertEquals(item.start(), Some("stop"))
      }
    finally pool.shutdownNow(): Unit
  }

  test("a refusal during an attempt lets it end, then refuses the retry; an interruption reaches it") {
    val refused = new Tracked
    assertEquals(refused.start(), None)
    var heard = Vector.empty[String]
    val off = refused.onInterrupt(heard :+= _)
    assertEquals(refused.refuse("taken"), Stop.InAttempt)
    assertEquals(refused.refuse("again"), Stop.Already)
    off()
    assertEquals((heard, refused.start(), refused.state.mayHaveRun), (Vector.empty, Some("taken"), true))

    val interrupted = new Tracked
    assertEquals(interrupted.start(), None)
    interrupted.onInterrupt(heard :+= _): Unit
    assertEquals(interrupted.refuse("revoked"), Stop.InAttempt)
    assertEquals(interrupted.interrupt("grace spent"), Stop.InAttempt)
    assertEquals(interrupted.interrupt("again"), Stop.Already)
    assertEquals((heard, interrupted.start()), (Vector("grace spent"), Some("grace spent")))
    assert(interrupted.done(TaskOutcome.Failed(
      (),
      new TaskInterrupted("grace spent"),
      Disposition.Interrupted,
      1
    )))
    assertEquals(interrupted.state, State.Ending(End.Interrupted("grace spent")))
    assertEquals((interrupted.refuse("late"), interrupted.handBack()), (Stop.TooLate, false))
    assert(interrupted.finish())
    assertEquals(interrupted.state, State.Ended(End.Interrupted("grace spent")))
  }
