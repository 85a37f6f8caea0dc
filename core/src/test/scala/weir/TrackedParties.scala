package weir

import weir.internal.UnsafeInterruptibleAttempt

import scala.collection.mutable

/**
 * The parties that move one [[Tracked]] item, as step machines for [[TrackedSuite]] to interleave: the
 * engine (its starts, and its attempts and retry's waits registered through the engine's own
 * [[UnsafeInterruptibleAttempt]]), the source's reader of outcomes, the source's controls (refuse, interrupt,
 * hand back) and the source's writer (finish). Every event and its answer is logged at the step it was
 * sent, with the state it found, so that the suite can check who won each race.
 */
final class TrackedParties(attempts: List[Boolean], controls: List[TrackedParties.Control]):
  import TrackedParties.*

  val item = new Tracked
  val log = mutable.ArrayBuffer.empty[Sent]
  private var clock = 0

  private def sent(party: String, event: String, answer: Any, before: Tracked.State): Unit =
    log += Sent(clock, party, event, answer, before)

  // ---- the engine: one task of `attempts.size` attempts at most, each succeeding or failing -----------

  private enum Phase:
    case AskStart(n: Int)
    case Register(n: Int)
    case Run(n: Int, attempt: UnsafeInterruptibleAttempt)
    case RegisterWait(n: Int)
    case EndWait(n: Int, backoff: UnsafeInterruptibleAttempt)
    case Over

  private var phase: Phase = Phase.AskStart(1)
  var outcome: Option[TaskOutcome[Unit, Unit]] = None

  // the task as the engine sees it: its start and its registration are the tracked item's
  private val task = new Interruptible:
    def tryStart(): Option[String] = item.start()
    def onInterrupt(interrupt: String => Unit): () => Unit = item.onInterrupt(interrupt)

  private def end(o: TaskOutcome[Unit, Unit]): Unit =
    outcome = Some(o)
    phase = Phase.Over

  private def interrupted(why: String, n: Int): TaskOutcome[Unit, Unit] =
    TaskOutcome.Failed((), new TaskInterrupted(why), Disposition.Interrupted, n)

  private def engineStep(): Unit =
    val before = item.state
    phase match
      case Phase.AskStart(n) =>
        val answer = task.tryStart()
        sent("engine", "start", answer, before)
        answer match
          case None => phase = Phase.Register(n)
          case Some(why) =>
            end(if n == 1 then TaskOutcome.NotStarted((), NotStartedReason.Refused(why))
            else interrupted(why, n - 1))
      case Phase.Register(n) =>
        val attempt = new UnsafeInterruptibleAttempt(() => ())
        val refused = attempt.start(task)
        sent("engine", "register", refused, before)
        refused match
          case None => phase = Phase.Run(n, attempt)
          case Some(why) => end(interrupted(why, n))
      case Phase.Run(n, attempt) =>
        val first = attempt.ended()
        sent("engine", "attempt ended", first, before)
        if !first then end(interrupted(attempt.cancelled().getOrElse(""), n))
        else if attempts(n - 1) then end(TaskOutcome.Succeeded((), (), n))
        else if n < attempts.size then phase = Phase.RegisterWait(n)
        else end(TaskOutcome.Failed((), new RuntimeException("failed"), Disposition.Skipped, n))
      case Phase.RegisterWait(n) =>
        val wait = new UnsafeInterruptibleAttempt(() => ())
        val refused = wait.start(task)
        sent("engine", "register wait", refused, before)
        // a wait refused at once is skipped: the next attempt's start is refused then
        phase = if refused.isEmpty then Phase.EndWait(n, wait) else Phase.AskStart(n + 1)
      case Phase.EndWait(n, wait) =>
        val first = wait.ended()
        sent("engine", "wait ended", first, before)
        if first then phase = Phase.AskStart(n + 1) else end(interrupted(wait.cancelled().getOrElse(""), n))
      case Phase.Over => ()

  // ---- the source -----------------------------------------------------------------------------------

  private var pending = controls
  private var read = false
  var doneWon: Option[Boolean] = None
  var finishes = 0

  private def sourceStep(): Unit =
    val before = item.state
    pending match
      case Control.Refuse(why) :: rest =>
        sent("source", s"refuse($why)", item.refuse(why), before)
        pending = rest
      case Control.Interrupt(why) :: rest =>
        sent("source", s"interrupt($why)", item.interrupt(why), before)
        pending = rest
      case Control.HandBack :: rest =>
        sent("source", "hand back", item.handBack(), before)
        pending = rest
      case Nil => ()

  private def readerStep(): Unit =
    val before = item.state
    outcome.foreach { o =>
      val won = item.done(o)
      sent("reader", s"done($o)", won, before)
      doneWon = Some(won)
      read = true
    }

  private def writerStep(): Unit =
    val before = item.state
    val won = item.finish()
    sent("writer", "finish", won, before)
    if won then finishes += 1

  /** The parties that have something to do now, by name, each with its next step. */
  def ready: Vector[(String, () => Unit)] =
    Vector(
      Option.when(phase != Phase.Over)("engine" -> (() => engineStep())),
      Option.when(pending.nonEmpty)("source" -> (() => sourceStep())),
      Option.when(outcome.isDefined && !read)("reader" -> (() => readerStep())),
      Option.when(item.state.isInstanceOf[Tracked.State.Ending])("writer" -> (() => writerStep()))
    ).flatten

  /** Runs the step of the `choice`-th ready party (modulo their number); false when none is ready. */
  def step(choice: Int): Boolean =
    val now = ready
    if now.isEmpty then false
    else
      clock += 1
      now(Math.floorMod(choice, now.size))._2()
      true

object TrackedParties:

  /** What the source's controls send, in order. */
  enum Control:
    case Refuse(reason: String)
    case Interrupt(reason: String)
    case HandBack

  /** One event sent at step `at` by `party`, what it was told, and the state it found. */
  final case class Sent(at: Int, party: String, event: String, answer: Any, before: Tracked.State)
