package weir.console

import weir.Validation

import scala.concurrent.duration.*

/**
 * How [[WeirConsole]] serves its pages.
 *
 *   - `adminToken`: the secret an operator logs in with to act (pause, resume, limits, retry, cancel,
 *     discard); `None` serves a read-only console, which refuses every action. For the console's own login
 *     only: a host app that decides access itself ([[WeirConsole.routes]] with an access function) leaves
 *     it unset.
 *   - `sessionLifetime`: how long a login lasts (the session cookie's `Max-Age`; the session is dropped on
 *     the server then too). 1 minute to 30 days.
 *   - `secureCookie`: marks the session cookie `Secure` (sent over TLS only) even when the login request
 *     did not come over TLS, as behind a proxy that terminates TLS and is not trusted (`trustProxy`).
 *   - `trustProxy`: the console is reached through a reverse proxy of yours, whose `X-Forwarded-For` (its
 *     last address) and `X-Forwarded-Proto` say who the client is and whether it used TLS: the login throttle
 *     counts that address, and `https` marks the cookie `Secure`. Leave it off when clients reach the console
 *     directly: they could send those headers themselves.
 *   - `redact`: applied to a task's payload (its JSON text) before any page shows it, so that secrets or
 *     personal data in payloads stay in the database. Its result is shown pretty-printed when it is JSON,
 *     as it is otherwise. Searching payload text still matches the stored payload: turn it off with
 *     `payloadSearch = false` when the redacted part must not be found by guessing.
 *   - `readers`: what an operator who may only read sees: [[ReaderView.Full]], everything (the default), or
 *     [[ReaderView.Summary]], no payload, header or error text (counts, states and times still shown). The
 *     token console's readers are those who have not logged in.
 *   - `pageSize`: tasks per page of the task list (1 to 1000).
 *   - `scanLimit`: how many finished tasks one page of the task list reads at most to check the filters
 *     no index answers (a key, a priority, payload text; by enqueue time, a state or a queue). A page that
 *     finds fewer matches ends where its scan stopped, and its next page goes on from there: the bound
 *     keeps every page fast on a history of any length. 100 to 1,000,000.
 *   - `countCap`: finished tasks are counted up to this many per queue and state, and a key's backlog up
 *     to this many (shown as `1,000+` beyond, for the default): what a count costs is bounded by it, not by
 *     the history's length. 10 to 1,000,000.
 *   - `countsEvery`: how often the overview's counts of every queue are read again while someone looks at
 *     it. Requests in between share the last reading, which the page dates; the next one is read in the
 *     background, one at a time, and no sooner than nine times the last one's own duration after it, so
 *     that counting a big backlog takes at most a tenth of one connection's time however many operators
 *     watch. A queue's own page reads its counts for each request. Zero: every request reads the counts
 *     and waits for them. 0 to 1 hour.
 *
 * Building or copying options never throws: [[WeirConsole.routes]] and [[WeirConsole.server]] check them
 * ([[errors]]) and fail, before any query, with one [[weir.InvalidSettings]] naming every bad value (an
 * admin token by its length only).
 */
final case class ConsoleOptions(
    adminToken: Option[String] = None,
    redact: String => String = identity,
    readers: ReaderView = ReaderView.Full,
    pageSize: Int = ConsoleOptions.Defaults.pageSize,
    payloadSearch: Boolean = true,
    scanLimit: Int = ConsoleOptions.Defaults.scanLimit,
    countCap: Int = ConsoleOptions.Defaults.countCap,
    countsEvery: FiniteDuration = ConsoleOptions.Defaults.countsEvery,
    sessionLifetime: FiniteDuration = ConsoleOptions.Defaults.sessionLifetime,
    secureCookie: Boolean = false,
    trustProxy: Boolean = false
):

  /** What is wrong with these options, each bad value named (a token by its length); empty when valid. */
  def errors: List[String] =
    Validation.check(pageSize > 0 && pageSize <= 1000, s"pageSize must be in 1..1000, was: $pageSize") ++
      Validation.check(
        scanLimit >= 100 && scanLimit <= 1000000,
        s"scanLimit must be in 100..1000000, was: $scanLimit"
      ) ++
      Validation.check(
        countCap >= 10 && countCap <= 1000000,
        s"countCap must be in 10..1000000, was: $countCap"
      ) ++
      Validation.check(
        countsEvery >= Duration.Zero && countsEvery <= 1.hour,
        s"countsEvery must be in 0 s..1 hour, was: $countsEvery"
      ) ++
      Validation.check(
        sessionLifetime >= 1.minute && sessionLifetime <= 30.days,
        s"sessionLifetime must be in 1 minute..30 days, was: $sessionLifetime"
      ) ++
      adminToken.toList.flatMap(t =>
        Validation.check(
          t != null && t.length >= 8,
          s"an admin token must have at least 8 characters, was: ${if t == null then "null" else t.length}"
        )
      )

  /** Whether actions can be authorised at all. */
  def writable: Boolean = adminToken.isDefined

object ConsoleOptions:
  object Defaults:
    val pageSize: Int = 50
    val scanLimit: Int = 5000
    val countCap: Int = 1000
    val countsEvery: FiniteDuration = 2.seconds
    val sessionLifetime: FiniteDuration = 8.hours

  /** A console that only reads. */
  val readOnly: ConsoleOptions = ConsoleOptions()
