package weir.postgres.internal

import weir.{Disposition, InvalidSettings, NotStartedReason, TaskInterrupted, TaskOutcome}
import weir.postgres.{Handled, Job, WorkerConfig}

import java.util.concurrent.ThreadLocalRandom

/** How a claim ends, as the completer writes it. */
private[postgres] enum Finish:
  /** The handler succeeded. */
  case Complete(token: Long)

  /** The attempt failed: retry after `delayMillis`, or dead at once when it is negative. */
  case Fail(token: Long, error: String, delayMillis: Long)

  /** The task never started: hand it back uncounted. */
  case HandBack(token: Long)

  /** The handler asked to run the task again after `delayMillis`: put it back, its attempt uncounted. */
  case Snooze(token: Long, delayMillis: Long)

  /** The claim this finishes. */
  def token: Long

private[postgres] object Finish:

  /**
   * What a task's outcome in the pipeline makes of its claim (see [[weir.postgres.DurableWorker]]).
   * `snoozed` reads a handler's value: `None` completes the task, a snooze puts it back, and a snooze with
   * a negative wait fails the attempt with an error naming it.
   */
  def of[A, B](
      config: WorkerConfig,
      snoozed: B => Option[Handled.Snoozed],
      outcome: TaskOutcome[Job[A], B]
  ): Finish = outcome match
    case TaskOutcome.Succeeded(job, value, _) =>
      snoozed(value) match
        case None => Complete(job.token)
        case Some(snooze) =>
          snooze.errors match
            case Nil => Snooze(job.token, snooze.after.toMillis)
            case errors => failed(config, job, new InvalidSettings("Snooze", errors))
    case TaskOutcome.NotStarted(job, _) => HandBack(job.token)
    case TaskOutcome.Failed(job, error, Disposition.Interrupted, _) =>
      // retried at once: a task stopped with its worker (or, between two in-memory attempts, whose claim may
      // have been rescued). One interrupted because its cancel was requested is finished as cancelled by the
      // fail statement itself, which reads the request on the row (see FinishSql.fail)
      val why = error match
        case e: TaskInterrupted => s"interrupted: ${e.reason}"
        case e => Errors.describe(e)
      Fail(job.token, why, 0L)
    case TaskOutcome.Failed(job, error, _, _) => failed(config, job, error)

  /** Whether the engine refused to start this task (another worker may hold its claim, or it was cancelled). */
  def refused[A, B](outcome: TaskOutcome[A, B]): Boolean = outcome match
    case TaskOutcome.NotStarted(_, NotStartedReason.Refused(_)) => true
    case _ => false

  private def failed[A](config: WorkerConfig, job: Job[A], error: Throwable): Finish =
    val delay =
      if config.backoff.retryable(error) then
        config.backoff.backoff(job.attempt, ThreadLocalRandom.current()).toMillis
      else -1L
    Fail(job.token, Errors.describe(error), delay)
