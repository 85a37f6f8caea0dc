package weir

/**
 * What a pipeline does when a task's handler fails.
 *
 * Whatever the policy, a failure is never dropped: it shows in the task's [[TaskOutcome]], in
 * [[Summary.failures]] and in the metrics.
 */
sealed trait FailurePolicy[F[_], -A]:
  /**
   * Which policy this is, for code whose acknowledgements depend on it (a source that acknowledges a
   * skipped failure only under [[FailurePolicy.skip]]); a dead-letter policy's sink stays its own.
   */
  def kind: FailurePolicy.Kind

object FailurePolicy:

  /**
   * Stop at the first failure: no new task starts, in-flight tasks are interrupted (recorded as
   * [[TaskOutcome.Failed]] with [[Disposition.Interrupted]]), and every buffered task is returned as
   * [[TaskOutcome.NotStarted]] with [[NotStartedReason.FailedFast]]. The summary's `stop` names the task and
   * the error that caused it.
   */
  def failFast[F[_]]: FailurePolicy[F, Any] = FailFast()

  /** Record the failure (in the summary and the outcome) and go on with the other tasks. */
  def skip[F[_]]: FailurePolicy[F, Any] = Skip()

  /**
   * Hand the task and its error to `sink`, then go on. If the sink itself fails, its error is added as a
   * suppressed exception and the task is recorded as [[Disposition.DeadLetterFailed]]: nothing is lost.
   * The sink runs on the worker that ran the task, so a slow sink holds that slot, and it runs uncancelably
   * (a drain's deadline waits for it), so a task is either handed over or recorded as not handed over.
   */
  def deadLetter[F[_], A](sink: (A, Throwable) => F[Unit]): FailurePolicy[F, A] = DeadLetter(sink)

  /** The three policies, by name: [[failFast]], [[skip]] and [[deadLetter]]. */
  enum Kind:
    case FailFast, Skip, DeadLetter

  private[weir] final case class FailFast[F[_]]() extends FailurePolicy[F, Any]:
    def kind: Kind = Kind.FailFast
  private[weir] final case class Skip[F[_]]() extends FailurePolicy[F, Any]:
    def kind: Kind = Kind.Skip
  private[weir] final case class DeadLetter[F[_], A](sink: (A, Throwable) => F[Unit])
      extends FailurePolicy[F, A]:
    def kind: Kind = Kind.DeadLetter
