package weir.postgres

import weir.Validation

import java.time.Instant

/**
 * A queue's rate limit, shared by every worker: at most `perSecond` tasks claimed per second on average,
 * and at most `burst` at once after a quiet spell (a token bucket of `burst` tokens, refilled at
 * `perSecond`, one spent per task claimed). A claimed task counts when it is claimed, not when it starts:
 * a worker's claimed tasks may wait in its buffer, so starts never come sooner than the rate allows.
 *
 * A bad rate throws nothing when built: [[TaskAdmin.limitRate]] and [[TaskAdmin.limits]] check it
 * ([[errors]]) and fail in `F` with a [[weir.InvalidSettings]] naming each value, changing nothing.
 */
final case class QueueRate(perSecond: Double, burst: Int):

  /** What is wrong with this rate, each value named; empty when it is valid. */
  def errors: List[String] =
    Validation.check(
      !perSecond.isNaN && !perSecond.isInfinite && perSecond > 0,
      s"a queue's rate must be finite and > 0 per second, was: $perSecond"
    ) ++ Validation.check(burst > 0, s"a queue's rate burst must be > 0, was: $burst")

/**
 * A queue's controls as every worker obeys them ([[TaskAdmin.pause]], [[TaskAdmin.limitRunning]],
 * [[TaskAdmin.limitRate]]), with its tasks running now (claimed and not finished, in every process) and
 * when the controls last changed.
 */
final case class QueueInfo(
    name: String,
    paused: Boolean,
    maxRunning: Option[Int],
    rate: Option[QueueRate],
    running: Long,
    updatedAt: Instant
)

/**
 * A control was set on a queue the database does not know: no task of it was ever enqueued (or all were
 * pruned), no worker has served it and no control was set on it. [[TaskAdmin.addQueue]] makes it known.
 */
final class UnknownQueue(val queue: String)
    extends IllegalArgumentException(
      s"unknown queue '$queue': it has no tasks and no worker has served it (TaskAdmin.addQueue declares it)"
    )
