package weir.internal

import weir.{NotStartedReason, StopReason}

import java.util.concurrent.atomic.AtomicReference
import scala.annotation.tailrec
import scala.concurrent.duration.FiniteDuration

/**
 * How a run ends, as one state machine: every way out — the natural end, a drain, a fail-fast, a kill at a
 * deadline, a release — is an [[RunEnd.Event]], and [[RunEnd.step]], a pure function, turns the state and
 * the event into the next state and the one [[RunEnd.Action]] to run. The [[Engine]] keeps the state in one
 * [[RunEnd.Cell]] (an `AtomicReference`, changed by compare-and-set) and runs the action the step returned;
 * the step itself runs no effect, since under contention it may run more than once.
 *
 * {{{
 *                      SourcesEnded ⇒ Wind                 WorkersLeft (sources done) ⇒ Finish(None)
 *   ┌─────────┐ ─────────────────────────────▶ (armed) ────────────────────────────────────────┐
 *   │ Running │                                                                                ▼
 *   └─────────┘ ── Requested(r) ⇒ Conduct(r) ──▶ ┌──────────────┐  the last of SourcesEnded, ┌───────────┐
 *        │         Release ⇒ Release(Some(r))    │ Stopping(r)  │  WorkersLeft, Killed       │ Ended(r?) │
 *        │                                       │              │ ─────⇒ Finish(Some(r)) ──▶ │           │
 *        │                                       └──────────────┘                            └───────────┘
 *        │                                        │  DeadlinePassed ⇒ Kill(what is left)
 *        │                                        │  Requested ⇒ StopTaking (the first request stands)
 *        └──── every phase: Release ⇒ Release(…) once; in Ended, Requested ⇒ nothing
 * }}}
 *
 * The run is over once the sources have ended (every producer finished, or they were cancelled by a kill)
 * and no worker is left (workers leave only once the buffer is finished: closed and empty, or stopped):
 * the step that makes both facts true moves to [[Phase.Ended]] and returns [[Action.Finish]], which writes
 * the summary. A run that ends on its own thus ends in the step of its last worker's exit, starts no fiber
 * for its end and wakes none. A stop request that comes first is kept ([[Phase.Stopping]]) and starts the
 * conductor, which arms the pool to end and waits for the end until the request's deadline; at the deadline
 * it interrupts what is left ([[Action.Kill]]), and the kill's [[Event.Killed]] makes both facts true.
 *
 * ==Cancellation==
 * The engine signals each event and runs its action in one step that cannot be cancelled: a state changed
 * whose action never ran would leave the run without an end. So an action waits only where nothing may
 * cancel it anyway: [[Action.Finish]] hands the unstarted tasks to the outcome stream, and [[Action.Release]]
 * (a resource's release, not cancelable) waits for the summary. The conductor waits for the end in a fiber
 * of its own, which the release cancels once the summary is written; a drain's caller waits for the summary
 * after its request, and cancelling that wait leaves the request in force.
 *
 * Invariants (checked by `RunEndSuite` on random sequences of events): [[Action.Finish]] is returned once
 * at most, and only when the sources ended and no worker is left; [[Action.Conduct]] at most once, and never
 * after the end; a kill only while stopping, once; the first request is the one the run ends with, and
 * later ones change nothing; [[Action.Release]] once.
 */
private[weir] object RunEnd:

  /** A stop request: why, and how long in-flight tasks may go on before they are interrupted. */
  final case class Request(reason: StopReason, deadline: FiniteDuration)

  enum Phase:
    /** No stop was requested and the run has not ended. */
    case Running

    /** `request` came first; the conductor shuts the run down; `killing` once its deadline passed. */
    case Stopping(request: Request, killing: Boolean)

    /** The summary is written (by the action of the step that made this phase), with the request if any. */
    case Ended(request: Option[Request])

  /**
   * `sourcesDone`: every producer ended (or they were cancelled by a kill), so nothing will be offered any
   * more; `workersGone`: the pool, armed to end, has no worker left (or its workers were killed);
   * `released`: the run's resource is being released.
   */
  final case class State(phase: Phase, sourcesDone: Boolean, workersGone: Boolean, released: Boolean)

  val initial: State = State(Phase.Running, sourcesDone = false, workersGone = false, released = false)

  enum Event:
    /** A drain or a fail-fast asks the run to stop. */
    case Requested(request: Request)

    /** Every producer ended on its own. */
    case SourcesEnded

    /** The pool, armed to end, saw its last worker leave (or killed them); may come more than once. */
    case WorkersLeft

    /** The conductor's deadline passed before the run ended. */
    case DeadlinePassed

    /** The kill is over: producers and workers are cancelled and gone. */
    case Killed

    /** The run's resource is released (or `run` was cancelled), with its release grace. */
    case Release(grace: FiniteDuration)

  enum Action:
    /** Nothing to do. */
    case Nothing

    /** A later request: the buffer stops handing out tasks at once (idempotent); the first request stands. */
    case StopTaking

    /** The first request: stop the buffer, publish the request, start the conductor. */
    case Conduct(request: Request)

    /** The sources ended first: close the buffer, and arm the pool, whose last worker's exit ends the run. */
    case Wind

    /** Interrupt what is left: cancel the workers, the producers, or both; then report [[Event.Killed]]. */
    case Kill(workers: Boolean, producers: Boolean)

    /** Write the summary, with the request that stopped the run if there was one. */
    case Finish(request: Option[Request])

    /**
     * The release: conduct `conduct` if the release is the run's first stop request, wait for the summary,
     * then cancel whatever fiber is left.
     */
    case Release(conduct: Option[Request])

  /** The next state and the action to run, for `event` in `state`. Pure. */
  def step(state: State, event: Event): (State, Action) =
    import Phase.*
    event match
      case Event.Requested(request) =>
        state.phase match
          case Running => (state.copy(phase = Stopping(request, killing = false)), Action.Conduct(request))
          case Stopping(_, _) => (state, Action.StopTaking)
          case Ended(_) => (state, Action.Nothing)
      case Event.Release(grace) =>
        if state.released then (state, Action.Nothing)
        else
          state.phase match
            case Running =>
              val request = Request(StopReason.Released, grace)
              (
                state.copy(phase = Stopping(request, killing = false), released = true),
                Action.Release(Some(request))
              )
            case _ => (state.copy(released = true), Action.Release(None))
      case Event.SourcesEnded =>
        if state.sourcesDone then (state, Action.Nothing) // after a kill, or reported twice
        else
          val wind = if state.phase == Running then Action.Wind else Action.Nothing
          settle(state.copy(sourcesDone = true), otherwise = wind)
      case Event.WorkersLeft => settle(state.copy(workersGone = true), otherwise = Action.Nothing)
      case Event.DeadlinePassed =>
        state.phase match
          case Stopping(request, false) =>
            (
              state.copy(phase = Stopping(request, killing = true)),
              Action.Kill(workers = !state.workersGone, producers = !state.sourcesDone)
            )
          case _ => (state, Action.Nothing)
      case Event.Killed =>
        state.phase match
          case Stopping(_, true) => settle(state.copy(sourcesDone = true, workersGone = true), Action.Nothing)
          case _ => (state, Action.Nothing)

  /** The run ends in the step that makes both facts true, once. */
  private def settle(state: State, otherwise: Action): (State, Action) =
    val request = state.phase match
      case Phase.Running => Some(None)
      case Phase.Stopping(r, _) => Some(Some(r))
      case Phase.Ended(_) => None
    request match
      case Some(r) if state.sourcesDone && state.workersGone =>
        (state.copy(phase = Phase.Ended(r)), Action.Finish(r))
      case _ => (state, otherwise)

  /**
   * The run's end state in an `AtomicReference`. A plain call, made inside an effect that then runs the
   * action returned; touched only at the run's end events, never per task.
   */
  final class Cell:
    private val ref = new AtomicReference[State](initial)

    def get: State = ref.get()

    @tailrec def signal(event: Event): Action =
      val seen = ref.get()
      val (next, action) = step(seen, event)
      if (next eq seen) || ref.compareAndSet(seen, next) then action else signal(event)

  /**
   * Why the run ended: a fail-fast wins over everything; else a failed source (the first, with the others
   * suppressed on it) over a drain or a release; else the request; else the run completed.
   */
  def reason(requested: Option[StopReason], sourceErrors: List[Throwable]): StopReason =
    val sourceFailed = sourceErrors.reverse match
      case Nil => None
      case first :: more =>
        more.foreach(first.addSuppressed)
        Some(StopReason.SourceFailed(first))
    requested match
      case Some(f: StopReason.FailedFast) => f
      case other => sourceFailed.orElse(other).getOrElse(StopReason.Completed)

  /** What the tasks that never started are told, by why the run ended. */
  def notStartedReason(stop: StopReason): NotStartedReason = stop match
    case StopReason.FailedFast(_) => NotStartedReason.FailedFast
    case StopReason.Drained => NotStartedReason.Drained
    case _ => NotStartedReason.Released
