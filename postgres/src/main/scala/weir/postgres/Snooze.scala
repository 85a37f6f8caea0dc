package weir.postgres

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
 */
final case class Snooze(after: FiniteDuration):
  require(after >= Duration.Zero, s"a snooze must be >= 0, was: $after")
