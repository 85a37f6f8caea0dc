package weir.postgres

import weir.Validation

/**
 * A queue's rate limit, shared by every worker: at most `perSecond` tasks claimed per second on average,
 * and at most `burst` at once after a quiet spell (a token bucket of `burst` tokens, refilled at
 * `perSecond`, one spent per task claimed). A claimed task counts when it is claimed, not when it starts:
 * a worker's claimed tasks may wait in its buffer, so starts never come sooner than the rate allows.
 *
 * A bad rate throws nothing when built: [[QueueControls.limitRate]] and [[QueueControls.limits]] check it
 * ([[errors]]) and fail in `F` with a [[weir.InvalidSettings]] naming each value, changing nothing.
 */
final case class QueueRate(perSecond: Double, burst: Int):

  /** What is wrong with this rate, each value named; empty when it is valid. */
  def errors: List[String] =
    Validation.check(
      !perSecond.isNaN && !perSecond.isInfinite && perSecond > 0,
      s"a queue's rate must be finite and > 0 per second, was: $perSecond"
    ) ++ Validation.check(burst > 0, s"a queue's rate burst must be > 0, was: $burst")
