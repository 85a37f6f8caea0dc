package weir.internal

import weir.{FailurePolicy, Limit, TaskOrder, RateLimiter, Retry, Source, Validation}

import scala.concurrent.duration.{Duration, FiniteDuration}

/** Everything a run needs to know, checked ([[errors]]) when a run starts. */
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
):

  /** Every bad value, named; a run starts only when there is none. */
  def errors: List[String] =
    source.errors ++
      limit.errors ++
      Validation.check(bufferCapacity > 0, s"buffer capacity must be > 0, was: $bufferCapacity") ++
      order.errors ++
      Validation.check(releaseGrace >= Duration.Zero, s"release grace must be >= 0, was: $releaseGrace") ++
      Validation.nested("retry", retry.errors) ++
      taskTimeout.toList.flatMap(t =>
        Validation.check(t > Duration.Zero, s"task timeout must be > 0, was: $t")
      ) ++
      Validation.check(failureSample >= 0, s"failure sample must be >= 0, was: $failureSample")
