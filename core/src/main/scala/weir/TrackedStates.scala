package weir

/**
 * The states, events and answers of a [[Tracked]] item, which `Tracked` exports: written `Tracked.State`,
 * `Tracked.Event`, `Tracked.Stop`, `Tracked.End`. [[Tracked.transition]] moves between them.
 */
object TrackedStates:

  /**
   * Where a tracked item is. One event moves it at a time ([[transition]]):
   *
   * {{{
   *               start              register               unregister
   *   HandedOn ─────────► Started ───────────► Attempting ────────────► Idle ──── register ───► Waiting
   *       │                  ▲                                           │ ▲                        │
   *       │                  └─────────────────── start ─────────────────┘ └────── unregister ──────┘
   *       │
   *       │ refuse (HandedOn), interrupt (any state above) ─► Stopping: no start, no registration any more
   *       │ handBack (HandedOn, or Stopping before a start) ─► Ending(HandedBack)
   *       │ done(outcome) (any state above) ────────────────► Ending(End.of(outcome))
   *       └───────────────────────────────────────────────────  Ending(end) ── finish ──► Ended(end)  (final)
   * }}}
   *
   * A refusal refuses starts only: one that finds the item started is kept beside its state (`refusal`),
   * so that the attempt it is in or about to register runs, and so does a retry's wait, and the next
   * start is refused. An interruption reaches the registration there is and stops everything after.
   */
  sealed trait State extends Step:
    /** Whether the item may have run here: it started, whatever came after, or its end says it ran. */
    def mayHaveRun: Boolean

    /** Why a start would be refused now, if it would: a read, which changes nothing. */
    def refusal: Option[String]
    final def next: State = this
    final def answer: Answer = Answer.Granted

  object State:
    /** Handed to the pipeline; not started. */
    case object HandedOn extends State:
      def mayHaveRun: Boolean = false
      def refusal: Option[String] = None

    /** The engine's start was granted; its attempt is about to register, or runs (a plain task's). */
    final case class Started(refusal: Option[String]) extends State:
      def mayHaveRun: Boolean = true

    /** In an attempt, whose `registration` an interruption reaches. */
    final case class Attempting(registration: Event.Register, refusal: Option[String]) extends State:
      def mayHaveRun: Boolean = true

    /** Between two attempts: started, neither in an attempt nor in a registered wait. */
    final case class Idle(refusal: Option[String]) extends State:
      def mayHaveRun: Boolean = true

    /** Waiting for its next attempt (a retry's backoff), under `registration`. */
    final case class Waiting(registration: Event.Register, refusal: Option[String]) extends State:
      def mayHaveRun: Boolean = true

    /**
     * Interrupted (or refused before it started), for `reason`, before its end, and not in a registration:
     * every start and registration is refused with `reason`. `started`: whether it had started; `refused`
     * and `interrupted`: which of the two stops it was sent (each is answered [[Stop.Already]] the second
     * time).
     */
    final case class Stopping(reason: String, started: Boolean, refused: Boolean, interrupted: Boolean)
        extends State:
      def mayHaveRun: Boolean = started
      def refusal: Option[String] = Some(reason)

    /** Its end is known; the source is persisting it. */
    final case class Ending(end: End) extends State:
      def mayHaveRun: Boolean = end.ran
      def refusal: Option[String] = Some(end.refusal)

    /** Final: its source persisted `end`. No event moves it any more. */
    final case class Ended(end: End) extends State:
      def mayHaveRun: Boolean = end.ran
      def refusal: Option[String] = Some(end.refusal)

    private[weir] val started: State = Started(None)
    private[weir] val idle: State = Idle(None)
    private[weir] val endingRan: State = Ending(End.Ran)
    private[weir] val endedRan: State = Ended(End.Ran)

  /** What a party tells a tracked item. */
  sealed trait Event

  object Event:
    /** The engine asks to start an attempt. */
    case object Start extends Event

    /**
     * The engine registers an attempt or a retry's wait; `interrupt` stops it. Told apart by identity (a
     * [[Tracked]]'s own registrations are also what unregisters them, one object for both).
     */
    class Register(val interrupt: String => Unit) extends Event:
      override def toString: String = "Register"

    /** The engine's `registration` ended without being interrupted. */
    final case class Unregister(registration: Register) extends Event

    /** The source: it must not start (again) here. */
    final case class Refuse(reason: String) extends Event

    /** The source: stop it. */
    final case class Interrupt(reason: String) extends Event

    /** The source takes back an item that never started. */
    case object HandBack extends Event

    /** The pipeline's outcome of the item, as its end. */
    final case class Done(end: End) extends Event

    /** The source persisted the end. */
    case object Finish extends Event

    private[weir] val doneRan: Event = Done(End.Ran)
    private[weir] val doneHandedBack: Event = Done(End.HandedBack)

  /** What the sender of an event is told. */
  enum Answer:
    /** It won: a start or registration may go on, an end is decided, a registration is undone. */
    case Granted

    /** A start or registration must not go on, for `reason` (a registration's interruption is called). */
    case Denied(reason: String)

    /** A refusal or interruption, and what it found; `reached`, the registration an interruption stops. */
    case Stopped(found: Stop, reached: Option[Event.Register])

    /** It came too late: the item has an end (or had another registration, or started), nothing changed. */
    case Late

  /** What a refusal or an interruption found: which side of its race with the engine it was on. */
  enum Stop:
    /** The item had not started: it never starts here. */
    case BeforeStart

    /**
     * It had started and was in an attempt, or about to register one: an interruption stops it; after a
     * refusal it runs to its end, which a source that must wait for it waits for.
     */
    case InAttempt

    /** It had started and was between attempts (or waiting for a retry, which an interruption ends). */
    case BetweenAttempts

    /** A stop of the same kind was sent before: nothing changed. */
    case Already

    /** Its end was known: nothing changed. */
    case TooLate

  /** How a tracked item ended here. */
  enum End:
    /** Its handler ran to an outcome: succeeded, or failed (for good, or to be retried by its source). */
    case Ran

    /** It was stopped while it ran ([[Disposition.Interrupted]]). */
    case Interrupted(reason: String)

    /** It refused to start ([[NotStartedReason.Refused]]). */
    case Refused(reason: String)

    /** It never started: drained, released, failed fast, or taken back by its source. */
    case HandedBack

    /** Why an item with this end refuses a start (none is asked of it but by a source's own mistake). */
    def refusal: String = if this == HandedBack then "its source took it back" else s"it has ended: $this"

    /** Whether it ran: an attempt of it started. */
    def ran: Boolean = this match
      case Ran | Interrupted(_) => true
      case Refused(_) | HandedBack => false

  object End:
    /** The end a pipeline's outcome gives an item. */
    def of(outcome: TaskOutcome[?, ?]): End =
      outcome match
        case TaskOutcome.Failed(_, error, Disposition.Interrupted, _) =>
          Interrupted(error match
            case e: TaskInterrupted => e.reason
            case e => String.valueOf(e.getMessage))
        case TaskOutcome.Succeeded(_, _, _) | TaskOutcome.Failed(_, _, _, _) => Ran
        case TaskOutcome.NotStarted(_, NotStartedReason.Refused(reason)) => Refused(reason)
        case TaskOutcome.NotStarted(_, _) => HandedBack

  /** What an event does: the state it moves the item to and the answer; a state is its own granted step. */
  sealed trait Step:
    def next: State
    def answer: Answer

  /** A step whose answer is not a plain grant. */
  final case class Told(next: State, answer: Answer) extends Step
