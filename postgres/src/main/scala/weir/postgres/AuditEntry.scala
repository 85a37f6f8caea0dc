package weir.postgres

import java.time.Instant

/**
 * One row of the audit log: an action of a [[TaskAdmin]] (see [[AuditLog.entries]]), recorded in the
 * action's own transaction at its time `at`, with who did it, its target (`queue`; `task` for a task's
 * action, whose queue is `None` when there was no such task) and its outcome, `detail` saying more (the
 * limits set, a cancel's reason, why it was refused).
 */
final case class AuditEntry(
    id: Long,
    at: Instant,
    operator: Operator,
    action: AuditAction,
    queue: Option[String],
    task: Option[Long],
    outcome: AuditOutcome,
    detail: Option[String]
)

/** What an operator did. */
enum AuditAction(val name: String):
  case Pause extends AuditAction("pause")
  case Resume extends AuditAction("resume")

  /** A queue's limit on running tasks, its rate, or both. */
  case Limits extends AuditAction("limits")
  case Retry extends AuditAction("retry")
  case Cancel extends AuditAction("cancel")
  case Discard extends AuditAction("discard")

object AuditAction:
  def parse(name: String): Option[AuditAction] = values.find(_.name == name)

/** What came of an action. */
enum AuditOutcome(val name: String):
  case Done extends AuditOutcome("done")

  /** A running task's cancel, which its worker carries out. */
  case Requested extends AuditOutcome("requested")

  /** The action did not apply (a retry of a task that is not dead or cancelled…); nothing changed. */
  case Refused extends AuditOutcome("refused")

  /** No task had the id; nothing changed. */
  case NotFound extends AuditOutcome("not-found")

object AuditOutcome:
  def parse(name: String): Option[AuditOutcome] = values.find(_.name == name)

/**
 * Which entries [[AuditLog.entries]] lists: those of `operator`, `queue` and `task` where given, older
 * than the entry `before` (a page's last id, for the next page), newest first.
 */
final case class AuditFilter(
    operator: Option[String] = None,
    queue: Option[String] = None,
    task: Option[Long] = None,
    before: Option[Long] = None
)
