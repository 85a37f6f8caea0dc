package weir

/**
 * A task that may be refused at the last moment before it starts. On a source built with
 * [[Source.refusable]], the engine asks each such task for its `refusal` as the last step before its start
 * (after its admission and its rate-limit permit, with no wait between the answer and the start), and a
 * task that answers with a reason never starts: it ends [[TaskOutcome.NotStarted]] with
 * [[NotStartedReason.Refused]], published at once rather than at the end of the run, and counted in
 * [[Summary.refused]].
 *
 * weir-postgres's jobs are refusable: a claim that may have been rescued from its worker, taken for dead
 * while it was alive, is refused, so that it never starts in two places from one claim.
 *
 * `refusal` is called on the worker's fiber, possibly more than once for one task; it must be quick, must
 * not block and must not throw.
 */
trait Refusable:
  /** Why this task must not start now, or `None` to let it start. */
  def refusal: Option[String]
