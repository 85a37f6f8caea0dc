package weir.console

/** What an operator who may only read ([[ConsoleAccess.Read]]) sees of a task. */
enum ReaderView:

  /** What an operator who acts sees: payloads (after `ConsoleOptions.redact`), headers, errors. */
  case Full

  /**
   * Every count, state, id, key, time and attempt, but neither the payload nor the headers nor the errors'
   * text of any task; and no search of payload text.
   */
  case Summary
