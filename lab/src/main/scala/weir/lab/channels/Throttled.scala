package weir.lab.channels

import cats.effect.IO
import fs2.Stream
import weir.{Limit, TaskOutcome, Pipeline, RateLimiter}

import scala.concurrent.duration.*

/**
 * The write-up's throttled variant (seed 001, "two serial channels"): every task has a first part that
 * may run at full speed (its delay) and a second part that calls something rate-limited (a token
 * bucket, then a fixed `service` time). Two ways to wire it:
 *
 *   - [[Shape.OneStage]]: one weir pipeline whose handler does both parts behind the rate limit, so the
 *     first parts wait for permits too;
 *   - [[Shape.TwoStages]]: a first weir pipeline, unbounded, runs the first parts; its outcomes stream
 *     into a second pipeline that alone is rate-limited. The first stage finishes at full speed.
 */
object Throttled:

  enum Shape(val name: String, val summary: String):
    case OneStage extends Shape("one-stage", "both parts in one handler behind the rate limit")
    case TwoStages
        extends Shape(
          "two-stages",
          "first parts unbounded, outcomes stream into a rate-limited second pipeline"
        )

  /**
   * @param rate   permits per `per` (the experiment's rate per second, scaled with its delays)
   * @param burst  the token bucket's capacity
   */
  final case class Limits(rate: Long, per: FiniteDuration, burst: Int, service: FiniteDuration):
    require(rate > 0, s"rate must be > 0, was: $rate")
    require(per > Duration.Zero, s"rate period must be > 0, was: $per")
    require(burst >= 1, s"burst must be >= 1, was: $burst")

  /** One run: when each task finished its first part and its second part (the tallies). */
  final case class Run(shape: Shape, first: Work, second: Work)

  /** Runs `shape` over first parts of `delays`, then checks that every task went through both parts. */
  def run(shape: Shape, delays: Vector[FiniteDuration], limits: Limits): IO[Run] =
    for
      first <- Work(delays)
      second <- Work(Vector.fill(delays.size)(limits.service))
      limiter <- RateLimiter.tokenBucket[IO](limits.rate, limits.per, limits.burst)
      source = Stream.range(0, delays.size).covary[IO]
      summary <- shape match
        case Shape.OneStage =>
          Pipeline(source)
            .process(i => first.task(i) *> second.task(i))
            .withLimit(Limit.unbounded)
            .withRateLimit(limiter)
            .run
        case Shape.TwoStages =>
          val firstDone = Pipeline(source)
            .process(i => first.task(i).as(i))
            .withLimit(Limit.unbounded)
            .outcomes
            .collect { case TaskOutcome.Succeeded(_, i, _) => i }
          Pipeline(firstDone)
            .process(second.task)
            .withLimit(Limit.unbounded)
            .withRateLimit(limiter)
            .run
      _ <- IO.raiseUnless(summary.allSucceeded && summary.received == delays.size)(
        new IllegalStateException(s"$shape did not run every task twice: $summary")
      )
    yield Run(shape, first, second)

  /**
   * The ideal ends of `shape` (ns): when the last first part ends and when the last task is done, with
   * no cost but the delays and the token bucket ([[Ideal.tokenBucketGrants]]). One-stage asks for the
   * permits in input order, all at time 0; two-stages asks for each when its first part ends.
   */
  def ideal(shape: Shape, delays: Vector[Long], limits: Limits): (Long, Long) =
    val service = limits.service.toNanos
    def grants(requests: Vector[Long]) =
      Ideal.tokenBucketGrants(requests, limits.rate, limits.per.toNanos, limits.burst)
    shape match
      case Shape.OneStage =>
        val g = grants(delays.map(_ => 0L))
        val firstEnds = delays.indices.map(i => g(i) + delays(i))
        (firstEnds.maxOption.getOrElse(0L), firstEnds.map(_ + service).maxOption.getOrElse(0L))
      case Shape.TwoStages =>
        val g = grants(delays.sorted)
        (delays.maxOption.getOrElse(0L), g.lastOption.fold(0L)(_ + service))
