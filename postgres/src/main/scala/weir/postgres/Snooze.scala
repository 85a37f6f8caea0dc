package weir.postgres

import weir.Validation

import scala.concurrent.duration.*

/**
 * A handler's answer "not now, again after `after`": returned as the handler's value (not raised), it puts
 * the task back in its queue, available once the database's clock is `after` past the moment its worker
 * writes it, its attempt not counted and its errors unchanged. The task keeps its place as its ordering
 * key's head: the key's later tasks wait for it.
 *
 * {{{
 * Pipeline(source).process { job =>
 *   upstream.ready.flatMap(ready => if ready then send(job.payload).as(Sent) else IO.pure(Snooze(10.minutes)))
 * }
 * }}}
 *
 * A value rather than an error, so that the pipeline's own retries and failure policy never see it: to
 * the engine a snoozed attempt succeeded (its summary counts it succeeded); [[WorkerStats.snoozed]] counts
 * it. A task may snooze any number of times: its `maxAttempts` bounds failed attempts only.
 *
 * A negative snooze throws nothing when built: its worker takes it as a failed attempt, with an
 * [[weir.InvalidSettings]] naming the value as its error (retried as the worker's backoff says).
 */
final case class Snooze(after: FiniteDuration):

  /** What is wrong with this snooze (a negative wait), naming it; empty when it is valid. */
  def errors: List[String] = Validation.check(after >= Duration.Zero, s"a snooze must be >= 0, was: $after")
