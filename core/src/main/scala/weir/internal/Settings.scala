package weir.internal

import weir.{FailurePolicy, Limit, TaskOrder, RateLimiter, Retry, Source}

import scala.concurrent.duration.FiniteDuration

/** Everything a run needs to know, validated when the pipeline is built. */
private[weir] final case class Settings[F[_], A, B](
    source: Source[F, A],
    handler: A => F[B],
    limit: Limit,
    bufferCapacity: Int,
    order: TaskOrder[A],
    policy: FailurePolicy[F, A],
    releaseGrace: FiniteDuration,
    retry: Retry,
    taskTimeout: Option[FiniteDuration],
    rateLimit: Option[RateLimiter[F]],
    queueWaits: Boolean,
    failureSample: Int
)
