package weir

import cats.Applicative
import cats.effect.kernel.{Resource, Temporal}
import cats.syntax.all.*

import scala.concurrent.duration.*

/**
 * A source's background work in one shape: a heartbeat, a rescue, a poll loop, a writer of
 * acknowledgements, a reader of outcomes. A service is a named loop of rounds on a fiber that its
 * `Resource` owns; each round says what comes next ([[Service.Next]]), and the resource's release stops it
 * as its [[Service.Settings]] say. weir-postgres' and weir-kafka's background parts are services; a source
 * of your own (an SQS queue whose messages' visibility must be extended, a log polled on a thread of its
 * own) can run its own the same way.
 *
 * {{{
 * val heartbeat = Service.periodic(Service.Settings.periodic("heartbeat", 500.millis), streak)(beat)
 * }}}
 *
 * A round that fails is told to the service's [[Service.Faults]] and the next one runs after the settings'
 * backoff: an error never ends the loop (a round that must end it on an error returns [[Service.Next.Done]]
 * itself). A round that succeeds is told too, which ends a streak of failures: a [[Streak]] is the usual
 * `Faults`, so that failures are logged once per streak, not once per round.
 *
 * ==Blocks==
 * Nothing but the acquisition's check of the settings; the rounds run on the service's fiber, on the
 * caller's execution context (a round that must run on a thread of its own shifts itself there, with
 * `evalOn`).
 *
 * ==Cancellation==
 * Releasing the resource stops the loop: with `finishWithin` zero (the default) its fiber is cancelled at
 * once, the round under way with it, and the release returns once the fiber has ended, its finalizers run.
 * With a `finishWithin` above zero, the release first runs the service's `finish` (which asks the work to
 * end: a marker queued behind the work, a stream closed), waits at most `finishWithin` for a round to
 * return [[Service.Next.Done]], then cancels what is left and waits for it. Write each round so that a
 * cancellation leaves nothing half-done (one statement, one transaction, or an `uncancelable` step with
 * only its waits in `poll`). A loop that ended on its own has nothing left to stop.
 *
 * ==Errors==
 * Starting fails with an [[InvalidSettings]] naming every bad value of the settings ([[Settings.errors]]),
 * before the first round. Nothing else fails the resource: a failing round is told to the faults; an error
 * raised by the faults themselves ends the loop.
 */
object Service:

  /**
   * What a round asks of its loop: the next round after the settings' `every` ([[Next.Again]]), after
   * `delay` ([[Next.After]]; zero: at once), or no round any more ([[Next.Done]]: the work has ended).
   */
  enum Next:
    case Again
    case After(delay: FiniteDuration)
    case Done

  /**
   * Where a service tells how each round went: `failed` with the error of each round that raised one,
   * `succeeded` after each round that did not. A [[Streak]] is one (failures told once per streak).
   */
  trait Faults[F[_]]:
    def failed(error: Throwable): F[Unit]
    def succeeded: F[Unit]

  object Faults:

    /** Faults told to no one. */
    def ignored[F[_]](using F: Applicative[F]): Faults[F] = new Faults[F]:
      def failed(error: Throwable): F[Unit] = F.unit
      def succeeded: F[Unit] = F.unit

  /**
   * The wait after the `n`-th failed round in a row: `first`, doubled after each further failure, never
   * longer than `max`. A round that succeeds starts the count again, and so does one that fails after
   * running at least `max`: a round that lives long (a session held until its connection drops) failing
   * after hours is the first failure of a new streak, reopened after `first`, however many such ends came
   * before it.
   */
  final case class Backoff(first: FiniteDuration, max: FiniteDuration):

    /** What is wrong with this backoff, each bad value named; empty if it is valid. */
    def errors: List[String] =
      Validation.check(first >= Duration.Zero, s"first must be >= 0, was: $first") ++
        Validation.check(max >= first, s"max must be >= first ($first), was: $max")

    /** The wait after the `failures`-th failed round in a row (1 for the first). */
    def after(failures: Long): FiniteDuration =
      val nanos = first.toNanos.toDouble * math.pow(2.0, (failures - 1L).max(0L).toDouble)
      if nanos >= max.toNanos.toDouble then max else nanos.toLong.nanos

  object Backoff:

    /** The same wait after every failed round. */
    def constant(wait: FiniteDuration): Backoff = Backoff(wait, wait)

  /**
   * How a service runs and stops.
   *
   * @param name what the service is called: in the errors of these settings, and by the sources that
   *   name their loggers after their parts (weir-postgres' `weir.postgres.worker.<name>`)
   * @param every the wait after a round that returns [[Next.Again]] (>= 0)
   * @param backoff the wait after a round that fails (see [[Backoff]])
   * @param firstAfter the wait before the first round (>= 0; zero: at once)
   * @param finishWithin how long a release waits for the work to end on its own once asked (`finish`),
   *   before cancelling it (>= 0; zero: cancelled at once; `Duration.Inf`: waits for as long as it takes)
   */
  final case class Settings(
      name: String,
      every: FiniteDuration,
      backoff: Backoff,
      firstAfter: FiniteDuration = Duration.Zero,
      finishWithin: Duration = Duration.Zero
  ):

    /** What is wrong with these settings, each bad value named; empty if they are valid. */
    def errors: List[String] =
      Validation.check(name != null && name.trim.nonEmpty, s"name must not be blank, was: '$name'") ++
        Validation.check(every >= Duration.Zero, s"every must be >= 0, was: $every") ++
        Validation.nested(
          "backoff",
          if backoff == null then List("must be set, was: null") else backoff.errors
        ) ++
        Validation.check(firstAfter >= Duration.Zero, s"firstAfter must be >= 0, was: $firstAfter") ++
        Validation.check(
          finishWithin != null && finishWithin >= Duration.Zero,
          s"finishWithin must be >= 0, was: $finishWithin"
        )

  object Settings:

    /**
     * A round every `every`, the first one after `every` too, and after `every` again when one fails:
     * a heartbeat, a rescue, a prune.
     */
    def periodic(name: String, every: FiniteDuration): Settings =
      Settings(name, every, Backoff.constant(every), firstAfter = every)

  /** Runs `round` as [[run]] does, each round followed by the next after `settings.every`. */
  def periodic[F[_]](settings: Settings, faults: Faults[F])(round: F[Unit])(using
      F: Temporal[F]
  ): Resource[F, Unit] =
    run(settings, faults)(round.as(Next.Again))

  /**
   * Runs `round` until it returns [[Next.Done]] or the resource is released, with nothing to ask of it at
   * release: with `finishWithin` above zero, the release waits that long for a loop that ends on its own
   * (a reader whose stream ends), then cancels it.
   */
  def run[F[_]](settings: Settings, faults: Faults[F])(round: F[Next])(using
      F: Temporal[F]
  ): Resource[F, Unit] =
    finishing(settings, faults, F.unit)(round)

  /**
   * Runs `round` until it returns [[Next.Done]] or the resource is released; a release runs `finish`, then
   * gives the loop `settings.finishWithin` to end before it cancels it (see [[Service]], "Cancellation").
   */
  def finishing[F[_]](settings: Settings, faults: Faults[F], finish: F[Unit])(round: F[Next])(using
      F: Temporal[F]
  ): Resource[F, Unit] =
    // nothing starts before the settings are checked
    Validation.resource(s"Service.Settings of '${settings.name}'", settings.errors) *> {
      // `failures`: the rounds failed in a row before this one. Only a round that follows a failure is
      // timed: after any other, a failure is the first of its streak whatever the round's length
      def loop(failures: Long): F[Unit] =
        val started = if failures == 0L then F.pure(0L) else F.monotonic.map(_.toNanos)
        started.flatMap(start =>
          round.attempt.flatMap {
            case Right(Next.Done) => faults.succeeded
            case Right(next) =>
              val wait = next match
                case Next.After(d) => d
                case _ => settings.every
              faults.succeeded *> pause(wait) *> loop(0L)
            case Left(e) =>
              val inARow =
                if failures == 0L then F.pure(1L)
                else
                  F.monotonic.map(end =>
                    if end.toNanos - start >= settings.backoff.max.toNanos then 1L else failures + 1L
                  )
              inARow.flatMap(n => faults.failed(e) *> pause(settings.backoff.after(n)) *> loop(n))
          }
        )
      val body = pause(settings.firstAfter) *> loop(0L)
      Resource.make(F.start(body))(fiber =>
        if settings.finishWithin == Duration.Zero then fiber.cancel
        // the fiber is cancelled however the finish ends (a `finish` that fails included): nothing outlives
        // the release; cancelling a fiber that already ended does nothing
        else
          F.guarantee(
            finish *> F.timeoutTo(fiber.join.void, settings.finishWithin, fiber.cancel),
            fiber.cancel
          )
      ).void
    }

  // a wait of zero costs no timer: a round that asks for the next at once (a poll loop, a writer that takes
  // from a queue) runs it at once
  private def pause[F[_]](wait: FiniteDuration)(using F: Temporal[F]): F[Unit] =
    if wait > Duration.Zero then F.sleep(wait) else F.unit
