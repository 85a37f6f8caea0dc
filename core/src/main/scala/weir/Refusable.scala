package weir

/**
 * A task that may be refused at the last moment before it starts. On a source built with
 * [[Source.refusable]], the engine asks each such task to [[tryStart]] as the last step before its start
 * (after its admission and its rate-limit permit, with no wait between the answer and the start), and a
 * task that answers with a reason never starts: it ends [[TaskOutcome.NotStarted]] with
 * [[NotStartedReason.Refused]], published at once rather than at the end of the run, and counted in
 * [[Summary.refused]]. A task that answers `None` starts at once: a task that tracks its own life (a
 * [[Tracked]] item's) counts itself started from that answer.
 *
 * weir-postgres's jobs are refusable: a claim that may have been rescued from its worker, taken for dead
 * while it was alive, is refused, so that it never starts in two places from one claim.
 *
 * `tryStart` is called on the worker's fiber, possibly more than once for one task (before each attempt,
 * and again after a refusal); it must be quick, must not block and must not throw. It is the engine's
 * question: a caller that only wants to know whether the task would start asks the task's own state
 * instead (an [[Interruption]]'s `requested`, a [[Tracked]] item's `state`), since a `None` may mark it
 * started.
 */
trait Refusable:
  /** Why this task must not start now; `None` lets it start, and may mark it started. */
  def tryStart(): Option[String]

  /** The former name of [[tryStart]], which it calls (and so may mark the task started). */
  @deprecated("use tryStart(), which says that the answer may mark the task started", "0.2.0")
  final def refusal: Option[String] = tryStart()
