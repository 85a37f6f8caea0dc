package weir.postgres.internal

import weir.{Disposition, InvalidSettings, NotStartedReason, TaskInterrupted, TaskOutcome}
import weir.postgres.{Handled, Job, NewTask, WorkerConfig}

import java.util.concurrent.ThreadLocalRandom

/** How a claim ends, as the completer writes it. */
private[postgres] enum Finish:
  /** The handler succeeded. */
  case Complete(token: Long)

  /** The handler succeeded with a result, JSON within the worker's `maxResultBytes`: kept with the task. */
  case Record(token: Long, result: String)

  /** The attempt failed: retry after `delayMillis`, or dead at once when it is negative. */
  case Fail(token: Long, error: String, delayMillis: Long)

  /** The task never started: hand it back uncounted. */
  case HandBack(token: Long)

  /** The handler asked to run the task again after `delayMillis`: put it back, its attempt uncounted. */
  case Snooze(token: Long, delayMillis: Long)

  /** The claim this finishes. */
  def token: Long

private[postgres] object Finish:

  /** What a handler's value asks of its claim, as its worker reads it. */
  enum Answer:
    /** Complete the task. */
    case Complete

    /** Complete the task with this result, JSON: `null` stores none. */
    case Record(json: String)

    /** Put the task back for later. */
    case Snooze(snooze: Handled.Snoozed)

  /**
   * What a task's outcome in the pipeline makes of its claim (see [[weir.postgres.DurableWorker]]).
   * `answer` reads a handler's value: a completion, a result (one over the worker's `maxResultBytes` sends
   * the task to dead at once, with an error naming its size), or a snooze (one with a negative wait fails
   * the attempt with an error naming it).
   */
  def of[A, B](
      config: WorkerConfig,
      answer: B => Answer,
      outcome: TaskOutcome[Job[A], B]
  ): Finish = outcome match
    case TaskOutcome.Succeeded(job, value, _) =>
      answer(value) match
        case Answer.Complete => Complete(job.token)
        case Answer.Record(json) if json == "null" => Complete(job.token)
        case Answer.Record(json) =>
          val bytes = NewTask.utf8Length(json)
          if bytes <= config.maxResultBytes then Record(job.token, json)
          else
            Fail(
              job.token,
              s"the result of task ${job.id} takes $bytes bytes of JSON, more than maxResultBytes " +
                s"(${config.maxResultBytes}): a result is for what the next tasks read; store larger data " +
                "elsewhere and return a reference to it",
              -1L
            )
        case Answer.Snooze(snooze) =>
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
