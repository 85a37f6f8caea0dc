package weir.console

/**
 * How [[WeirConsole]] serves its pages.
 *
 *   - `adminToken`: the secret an operator logs in with to act (pause, resume, limits, retry, cancel,
 *     discard); `None` serves a read-only console, which refuses every action.
 *   - `redact`: applied to a task's payload (its JSON text) before any page shows it, so that secrets or
 *     personal data in payloads stay in the database. Its result is shown pretty-printed when it is JSON,
 *     as it is otherwise. Searching payload text still matches the stored payload: turn it off with
 *     `payloadSearch = false` when the redacted part must not be found by guessing.
 *   - `pageSize`: tasks per page of the task list (1 to 1000).
 */
final case class ConsoleOptions(
    adminToken: Option[String] = None,
    redact: String => String = identity,
    pageSize: Int = ConsoleOptions.Defaults.pageSize,
    payloadSearch: Boolean = true
):
  require(pageSize > 0 && pageSize <= 1000, s"pageSize must be in 1..1000, was: $pageSize")
  adminToken.foreach(t =>
    require(t.length >= 8, s"an admin token must have at least 8 characters, was: ${t.length}")
  )

  /** Whether actions can be authorised at all. */
  def writable: Boolean = adminToken.isDefined

object ConsoleOptions:
  object Defaults:
    val pageSize: Int = 50

  /** A console that only reads. */
  val readOnly: ConsoleOptions = ConsoleOptions()
