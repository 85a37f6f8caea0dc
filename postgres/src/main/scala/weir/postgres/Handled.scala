package weir.postgres

import weir.Validation

import scala.annotation.implicitNotFound
import scala.concurrent.duration.*
import scala.util.NotGiven

/**
 * What the handler of a snoozing worker ([[DurableWorker.startSnoozing]]) answers: [[Handled.Done]] with its
 * value, and the task is completed; or the job's [[Job.snooze]], and the task goes back to its queue for
 * later.
 *
 * {{{
 * DurableWorker.startSnoozing[IO, Invoice, Receipt](db, WorkerConfig(queue = "invoices")) { source =>
 *   Pipeline(source).process { job =>
 *     ledger.isOpen.flatMap(open => if open then post(job.payload).map(Handled.Done(_)) else IO.pure(job.snooze(10.minutes)))
 *   }
 * }
 * }}}
 *
 * A value rather than an error, so that the pipeline's own retries and failure policy never see a snooze:
 * to the engine a snoozed attempt succeeded. The worker tells the two cases apart by this sealed type, so a
 * handler keeps its own result type `B`, and a worker started with [[DurableWorker.start]], which completes
 * every success, does not compile with a handler whose value may be a snooze (see [[Handled.NeverSnoozes]]).
 */
sealed trait Handled[+B] extends Product with Serializable

object Handled:

  /** The handler did its work, with this value: the task is completed. */
  final case class Done[+B](value: B) extends Handled[B]

  /**
   * "Not now, again after `after`" (built by [[Job.snooze]]): the task goes back to its queue, available
   * once the database's clock is `after` past the moment its worker writes it, its attempt not counted and
   * its errors unchanged. It keeps its id, so it stays its ordering key's head. A task may snooze any number
   * of times: its `maxAttempts` bounds failed attempts only.
   *
   * A negative wait throws nothing when built: its worker takes it as a failed attempt, with an
   * [[weir.InvalidSettings]] naming the value as its error (retried as the worker's backoff says).
   */
  final case class Snoozed private[postgres] (after: FiniteDuration) extends Handled[Nothing]:

    /** What is wrong with this snooze (a negative wait), naming it; empty when it is valid. */
    def errors: List[String] = Validation.check(after >= Duration.Zero, s"a snooze must be >= 0, was: $after")

  /**
   * Evidence that no value of `B` can be a snooze, so that [[DurableWorker.start]], which completes every
   * task whose handler succeeds, never drops one: it is there for every `B` but the supertypes of
   * [[Snoozed]] (`Handled[X]`, `Any`, `Product`, ...).
   */
  @implicitNotFound(
    "DurableWorker.start completes every task whose handler succeeds, but a value of ${B} may be a snooze: " +
      "start a handler that snoozes with DurableWorker.startSnoozing (its handler answers Handled.Done(value) " +
      "or job.snooze(d)), and give one that never snoozes a result type a snooze is not (Unit, say)"
  )
  final class NeverSnoozes[B] private ()

  object NeverSnoozes:
    given [B](using NotGiven[Snoozed <:< B]): NeverSnoozes[B] = new NeverSnoozes[B]
