package weir.console

/**
 * What one request may do in the console: nothing, read, or read and act (pause, resume, limits, retry,
 * cancel, discard). `operator` names who asks, as the pages show it and as every action is recorded in
 * the audit log; `session`, when given, tells that operator's sessions apart in the log. Neither is a
 * secret: both are stored and shown (give a session's public label or a hash, never a cookie's value).
 */
enum ConsoleAccess:

  /** Every page and action answers 403. */
  case Denied

  /** Pages only; every action answers 403. */
  case Read(operator: String, session: Option[String] = None)

  /** Pages and actions (each action with the CSRF token of this operator's pages). */
  case Act(operator: String, session: Option[String] = None)

object ConsoleAccess:

  /** The longest operator name or session label the console takes. */
  val maxName: Int = 200
