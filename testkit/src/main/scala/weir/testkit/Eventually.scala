package weir.testkit

import cats.effect.kernel.Temporal
import cats.syntax.all.*

import scala.concurrent.duration.*

/**
 * Waits for something a test can only observe by asking again: a row a worker writes, a counter a running
 * pipeline moves, an offset a consumer commits. Polling with a deadline is how a test waits for a signal the
 * code under test gives without a callback, and the failure says what never came and what was seen last.
 *
 * {{{
 * Eventually.until("10 claims", worker.stats)(_.claimed >= 10)
 * }}}
 */
object Eventually:

  /** How long a wait lasts unless told otherwise. */
  val defaultWithin: FiniteDuration = 30.seconds

  /** How long a wait sleeps between two probes unless told otherwise. */
  val defaultEvery: FiniteDuration = 50.millis

  /**
   * Runs `probe` until `done` holds for its value, and returns that value.
   *
   * Timing: the first probe runs at once, each next one `every` after the previous one ended, and none
   * starts at or after the deadline, `within` after the call. A probe still running at the deadline is
   * cancelled. So with a probe that takes no time, the wait returns at the first multiple of `every` at
   * which `done` holds, or fails exactly `within` after it began.
   *
   * Errors: at the deadline, [[Eventually.TimedOut]] naming `what`, `within` and the last value seen (or
   * that no probe answered); an error of `probe` fails the wait at once, unchanged. `within` and `every` must
   * be > 0: otherwise it fails at once with an `IllegalArgumentException` naming the value.
   *
   * Cancellation: cancelling the wait cancels the probe or the sleep in progress.
   */
  def until[F[_], A](
      what: String,
      probe: F[A],
      within: FiniteDuration = defaultWithin,
      every: FiniteDuration = defaultEvery
  )(done: A => Boolean)(using F: Temporal[F]): F[A] =
    poll(what, probe, within, every)(a => Option.when(done(a))(a))

  /** As [[until]], for a probe that answers `Some` once what it waits for is there; returns what is in it. */
  def defined[F[_], A](
      what: String,
      probe: F[Option[A]],
      within: FiniteDuration = defaultWithin,
      every: FiniteDuration = defaultEvery
  )(using F: Temporal[F]): F[A] =
    poll(what, probe, within, every)(identity)

  private def poll[F[_], A, B](what: String, probe: F[A], within: FiniteDuration, every: FiniteDuration)(
      pick: A => Option[B]
  )(using F: Temporal[F]): F[B] =
    def loop(deadline: FiniteDuration, last: Option[A]): F[B] =
      F.monotonic.flatMap { now =>
        val left = deadline - now
        if left <= Duration.Zero then F.raiseError(new TimedOut(what, within, last, probeRunning = false))
        else
          F.timeoutTo(probe.map(Some(_)), left, F.pure(None)).flatMap {
            case None => F.raiseError(new TimedOut(what, within, last, probeRunning = true))
            case Some(a) =>
              pick(a) match
                case Some(b) => F.pure(b)
                case None =>
                  F.monotonic.flatMap(after => F.sleep(every.min(deadline - after).max(Duration.Zero))) *>
                    loop(deadline, Some(a))
          }
      }
    if within <= Duration.Zero then
      F.raiseError(new IllegalArgumentException(s"within must be > 0, was: $within"))
    else if every <= Duration.Zero then
      F.raiseError(new IllegalArgumentException(s"every must be > 0, was: $every"))
    else F.monotonic.flatMap(start => loop(start + within, None))

  /**
   * A wait's deadline passed: what it waited for (`what`), for how long, and the last value its probe gave
   * (`None` if no probe answered). An `AssertionError`, as a failed expectation of a test is.
   */
  final class TimedOut(
      val what: String,
      val within: FiniteDuration,
      val last: Option[Any],
      probeRunning: Boolean
  ) extends AssertionError(
        s"timed out after $within waiting for $what; " +
          last.fold("no probe answered")(v => s"last value: ${TimedOut.shown(v)}") +
          (if probeRunning then " (a probe was still running at the deadline)" else "")
      )

  object TimedOut:
    /** The longest a value's text gets in a message: a long collection is cut, not printed whole. */
    val shownChars: Int = 2000

    private def shown(value: Any): String =
      val text = String.valueOf(value)
      if text.length <= shownChars then text else s"${text.take(shownChars)}… (${text.length} characters)"
