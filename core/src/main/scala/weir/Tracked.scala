package weir

import java.util.concurrent.atomic.AtomicReference
import scala.annotation.tailrec

/**
 * The life of one item a source tracks until it ends (a claimed task, a consumed record): from the moment
 * the source hands it to a pipeline until the source has persisted how it ended. Every party that moves it
 * sends an event here, and one compare-and-set on one reference decides each race between them, so that a
 * source writes none of this itself and supplies only how it persists an end (a finish statement, an offset
 * commit). The states, the events and the one function that moves between them are in the companion.
 *
 * The parties and their events:
 *   - the engine, through the item's [[Refusable.tryStart]] and [[Interruptible.onInterrupt]], which
 *     delegate to [[start]] and [[onInterrupt]]: before each attempt, and around each attempt and retry's
 *     wait (a source's own work for the item, such as a dead-letter write, may [[start]] it too);
 *   - the source: [[refuse]] (it must not start, or start again, here: another worker holds it, its
 *     partition was revoked), [[interrupt]] (stop it: an operator's cancel, a revoke's grace spent) and
 *     [[handBack]] (it takes back an item that never started);
 *   - the source's reader of the pipeline's outcomes: [[done]], with the item's [[TaskOutcome]];
 *   - the source's writer, once the end is persisted: [[finish]].
 *
 * Each event answers whether it won: of a start and a refusal (or an interruption, or a hand-back), the
 * first decides whether the item runs here; of an outcome and a hand-back, the first decides its end; once
 * the end is known, every other event is told it came too late and changes nothing.
 *
 * Concurrency: any party, on any thread, at any time. Every method is lock-free (a read and a
 * compare-and-set, read again when another event came between) and never blocks; the engine's `interrupt`
 * function is called by the event that reaches it, on that caller's thread, after its transition.
 * Cancellation: nothing here is an effect; a source calls these inside `F.delay`, and an event sent is sent.
 * Memory: this object and one reference. A start, an attempt's end, an outcome that ran and its finish
 * move between shared states; an attempt's registration allocates three small objects (the registration,
 * which is also what undoes it, its state, and the event that ends it). A source may extend this class to
 * keep its own fields on the same object.
 */
class Tracked:
  import Tracked.*

  private val current = new AtomicReference[State](State.HandedOn)

  /** Where the item is now: a snapshot, which another party may change at once. */
  final def state: State = current.get

  /**
   * The engine's start (an item's [[Refusable.tryStart]] delegates here): `None`, and the item counts as
   * started, running or about to, unless it was refused, interrupted or handed back first: then the
   * reason, and it does not start. Asked again before each retry, which is refused the same way.
   */
  final def start(): Option[String] =
    send(Event.Start) match
      case Answer.Denied(reason) => Some(reason)
      case _ => None

  /**
   * The engine's registration of an attempt or a retry's wait (an item's [[Interruptible.onInterrupt]]
   * delegates here): a later [[interrupt]] calls `interrupt` once; an item already told to stop, or
   * refused, calls it at once, here, as the contract of [[Interruptible]] asks. Returns what unregisters it.
   */
  final def onInterrupt(interrupt: String => Unit): () => Unit =
    val registration = new Registration(interrupt, this)
    send(registration) match
      case Answer.Denied(reason) =>
        interrupt(reason)
        nothing
      case _ => registration

  private def unregister(registration: Event.Register): Unit = send(Event.Unregister(registration)): Unit

  /**
   * The source's "not here": the item must not start, nor start another attempt, here. An attempt running
   * now goes on (and one about to register still runs); what the answer says is in [[Stop]].
   */
  final def refuse(reason: String): Stop = stopped(send(Event.Refuse(reason)))

  /**
   * The source's "stop it": an attempt (or retry's wait) registered now is interrupted through its
   * registration, and no attempt starts after it. Its reason replaces a refusal's as the one later starts
   * are refused with. What the answer says is in [[Stop]].
   */
  final def interrupt(reason: String): Stop =
    send(Event.Interrupt(reason)) match
      case Answer.Stopped(found, Some(registration)) =>
        registration.interrupt(reason)
        found
      case answer => stopped(answer)

  /**
   * The source takes back an item that never started (its pipeline is over, or never received it): true if
   * it won, and the item ends [[End.HandedBack]], for the source to persist as such; false if it had
   * started, or had an end already.
   */
  final def handBack(): Boolean = send(Event.HandBack) == Answer.Granted

  /**
   * The pipeline's outcome of the item, sent by the source's reader of outcomes: its end is
   * [[End.of]]`(outcome)`, for the source to persist; true if this decided the end, false if one came first.
   */
  final def done(outcome: TaskOutcome[?, ?]): Boolean = send(doneEvent(End.of(outcome))) == Answer.Granted

  /** The source persisted the item's end: it is [[State.Ended]] for good. False if it had no end yet. */
  final def finish(): Boolean = send(Event.Finish) == Answer.Granted

  override def toString: String = s"Tracked(${current.get})"

  @tailrec private def send(event: Event): Answer =
    val now = current.get
    val step = transition(now, event)
    if (step.next eq now) || current.compareAndSet(now, step.next) then step.answer
    else send(event)

  private def stopped(answer: Answer): Stop =
    answer match
      case Answer.Stopped(found, _) => found
      case _ => Stop.TooLate

object Tracked:
  export TrackedStates.{Answer, End, Event, State, Step, Stop, Told}

  /**
   * The one transition of a tracked item: what `event` does in `state` (see [[State]] for the diagram).
   * Pure; the common path (a start, an attempt's end, an outcome that ran, its persistence) moves between
   * shared states, and only a registration or a stop allocates.
   */
  def transition(state: State, event: Event): Step =
    import State.*
    state match
      case Ended(how) => afterEnd(state, how, event)
      case Ending(how) => if event == Event.Finish then ended(how) else afterEnd(state, how, event)
      case s: Stopping => stopping(s, event)
      case HandedOn =>
        event match
          case Event.Start => started
          case r: Event.Register => Attempting(r, None)
          case Event.Refuse(why) => Told(
              Stopping(why, started = false, refused = true, interrupted = false),
              stopped(Stop.BeforeStart)
            )
          case Event.Interrupt(why) => Told(
              Stopping(why, started = false, refused = false, interrupted = true),
              stopped(Stop.BeforeStart)
            )
          case Event.HandBack => Ending(End.HandedBack)
          case Event.Done(how) => ending(how)
          case Event.Unregister(_) | Event.Finish => Told(state, Answer.Late)
      case Started(refusal) =>
        event match
          case Event.Start => refusal.fold[Step](state)(why => Told(state, Answer.Denied(why)))
          case r: Event.Register => Attempting(r, refusal)
          case Event.Refuse(why) =>
            if refusal.isDefined then Told(state, stopped(Stop.Already))
            else Told(Started(Some(why)), stopped(Stop.InAttempt))
          case Event.Interrupt(why) =>
            Told(
              Stopping(why, started = true, refused = refusal.isDefined, interrupted = true),
              stopped(Stop.InAttempt)
            )
          case Event.Done(how) => ending(how)
          case Event.HandBack | Event.Unregister(_) | Event.Finish => Told(state, Answer.Late)
      case Attempting(registration, refusal) =>
        registered(state, registration, refusal, Stop.InAttempt, event)
      case Waiting(registration, refusal) =>
        registered(state, registration, refusal, Stop.BetweenAttempts, event)
      case Idle(refusal) =>
        event match
          case Event.Start => refusal.fold(started)(why => Told(state, Answer.Denied(why)))
          case r: Event.Register => Waiting(r, refusal)
          case Event.Refuse(why) =>
            if refusal.isDefined then Told(state, stopped(Stop.Already))
            else Told(Idle(Some(why)), stopped(Stop.BetweenAttempts))
          case Event.Interrupt(why) =>
            Told(
              Stopping(why, started = true, refused = refusal.isDefined, interrupted = true),
              stopped(Stop.BetweenAttempts)
            )
          case Event.Done(how) => ending(how)
          case Event.HandBack | Event.Unregister(_) | Event.Finish => Told(state, Answer.Late)

  // in an attempt (`found` is InAttempt) or a retry's wait (BetweenAttempts), under `registration`
  private def registered(
      state: State,
      registration: Event.Register,
      refusal: Option[String],
      found: Stop,
      event: Event
  ): Step =
    import State.*
    event match
      case Event.Unregister(r) =>
        if r ne registration then Told(state, Answer.Late)
        else refusal.fold(idle)(why => Idle(Some(why)))
      case Event.Refuse(why) =>
        if refusal.isDefined then Told(state, stopped(Stop.Already))
        else
          val next = state match
            case Waiting(_, _) => Waiting(registration, Some(why))
            case _ => Attempting(registration, Some(why))
          Told(next, stopped(found))
      case Event.Interrupt(why) =>
        Told(
          Stopping(why, started = true, refused = refusal.isDefined, interrupted = true),
          Answer.Stopped(found, Some(registration))
        )
      case Event.Done(how) => ending(how)
      // the engine registers once per attempt or wait and asks for a start between them: a second
      // registration replaces the first, and a start changes nothing
      case r: Event.Register =>
        state match
          case Waiting(_, _) => Waiting(r, refusal)
          case _ => Attempting(r, refusal)
      case Event.Start => refusal.fold[Step](state)(why => Told(state, Answer.Denied(why)))
      case Event.HandBack | Event.Finish => Told(state, Answer.Late)

  private def stopping(state: State.Stopping, event: Event): Step =
    val found = if state.started then Stop.BetweenAttempts else Stop.BeforeStart
    event match
      case Event.Start | (_: Event.Register) => Told(state, Answer.Denied(state.reason))
      case Event.Refuse(_) =>
        if state.refused then Told(state, stopped(Stop.Already))
        else Told(state.copy(refused = true), stopped(found))
      case Event.Interrupt(why) =>
        if state.interrupted then Told(state, stopped(Stop.Already))
        else Told(state.copy(reason = why, interrupted = true), stopped(found))
      case Event.HandBack => if state.started then Told(state, Answer.Late) else State.Ending(End.HandedBack)
      case Event.Done(how) => ending(how)
      case Event.Unregister(_) | Event.Finish => Told(state, Answer.Late)

  // an item with an end: a start or registration is denied, anything else is late
  private def afterEnd(state: State, how: End, event: Event): Step =
    event match
      case Event.Start | (_: Event.Register) => Told(state, Answer.Denied(how.refusal))
      case Event.Refuse(_) | Event.Interrupt(_) => Told(state, stopped(Stop.TooLate))
      case _ => Told(state, Answer.Late)

  private def ending(how: End): State = if how == End.Ran then State.endingRan else State.Ending(how)
  private def ended(how: End): State = if how == End.Ran then State.endedRan else State.Ended(how)

  private def stopped(found: Stop): Answer = Answer.Stopped(found, None)
  private def doneEvent(how: End): Event =
    how match
      case End.Ran => Event.doneRan
      case End.HandedBack => Event.doneHandedBack
      case _ => Event.Done(how)

  private val nothing: () => Unit = () => ()

  // a registration that is also the function that undoes it: one object per attempt or wait
  private final class Registration(interrupt: String => Unit, tracked: Tracked)
      extends Event.Register(interrupt),
        (() => Unit):
    def apply(): Unit = tracked.unregister(this)
