package weir

/**
 * What happened to one task. Every task a pipeline takes from its source ends in exactly one outcome.
 */
enum TaskOutcome[+A, +B]:

  /** The handler returned `value`, at attempt number `attempts` (1 unless it was retried). */
  case Succeeded(task: A, value: B, attempts: Int)

  /**
   * The handler failed (or was interrupted) after `attempts` attempts; `error` is the last attempt's and
   * `disposition` says what the failure policy did with it.
   */
  case Failed(task: A, error: Throwable, disposition: Disposition, attempts: Int)

  /** The task was taken from the source but never started, and is handed back. */
  case NotStarted(task: A, reason: NotStartedReason)

  def task: A

/** What became of a failed task. */
enum Disposition:
  /** Recorded and skipped ([[FailurePolicy.skip]]). */
  case Skipped

  /** Handed to the dead-letter sink. */
  case DeadLettered

  /** The dead-letter sink failed too; its error is suppressed on the task's error. */
  case DeadLetterFailed

  /**
   * This failure stopped the pipeline ([[FailurePolicy.failFast]]). Only the first failure is `Aborted`; a
   * task that fails on its own while the run is already stopping is recorded as `Skipped`.
   */
  case Aborted

  /**
   * The task was running when the pipeline stopped (fail-fast, a drain deadline, or release) and was
   * cancelled, or the task itself asked to be stopped ([[Interruptible]]); its error is
   * [[TaskInterrupted]]. An interrupted task is not retried and goes to no failure policy.
   */
  case Interrupted

/** Why a task never started. */
enum NotStartedReason:
  /** The pipeline was asked to drain. */
  case Drained

  /** Another task failed under [[FailurePolicy.failFast]]. */
  case FailedFast

  /** The run was released (its resource, or `run` cancelled) without a drain. */
  case Released

  /** The task itself refused to start, for `reason` (see [[Refusable]]). */
  case Refused(reason: String)

/** The error of an attempt that ran longer than the pipeline's task timeout. */
final class TaskTimedOut(val timeout: scala.concurrent.duration.FiniteDuration)
    extends java.util.concurrent.TimeoutException(s"task attempt timed out after $timeout")

/**
 * The error of a task that was cancelled while it ran: the run stopped, or the task was told to stop
 * ([[Interruptible]]); `reason` says which. An attempt that fails with it, whoever raised it, is recorded
 * interrupted: not retried, and not handed to the failure policy.
 */
final class TaskInterrupted(val reason: String)
    extends RuntimeException(s"task interrupted: $reason", null, false, false)
