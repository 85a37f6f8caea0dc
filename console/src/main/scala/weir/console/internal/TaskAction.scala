package weir.console.internal

/** What an operator can do to a task from the console; each one is a [[weir.postgres.TaskAdmin]] call. */
private[console] enum TaskAction(val name: String):
  case Retry extends TaskAction("retry")
  case Cancel extends TaskAction("cancel")
  case Discard extends TaskAction("discard")

private[console] object TaskAction:
  def parse(s: String): Option[TaskAction] = values.find(_.name == s)

  /** A path segment naming an action. */
  def unapply(segment: String): Option[TaskAction] = parse(segment)

/** What an action did to one task: done (saying what), no such task, or refused (saying why). */
private[console] enum ActionOutcome:
  case Done(what: String)
  case NotFound
  case Refused(why: String)
