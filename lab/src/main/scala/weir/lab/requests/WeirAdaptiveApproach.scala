package weir.lab.requests

import cats.effect.IO
import fs2.Stream
import weir.*

/**
 * weir with an adaptive limit: the same pipeline as [[WeirFixedApproach]] under `Limit.adaptive` (the
 * default gradient), allowed anywhere in `[1, concurrency]` and starting at `concurrency`. The delay
 * server's latency does not grow with load until the machine itself saturates, so the gradient should hold
 * the limit at the top; it lowers it only when the attempts' latencies show queueing (a client or server
 * out of CPU). Starting low instead would measure the ramp, not the client: with windows as long as a
 * round trip (1.5 s on average here) the √limit growth needs minutes to reach 5000.
 */
object WeirAdaptiveApproach extends RequestApproach:
  val name = "weir-adaptive"
  val summary =
    "weir's Pipeline under Limit.adaptive(initial = max = concurrency, gradient), asynchronous client"

  def limit(concurrency: Int): Limit =
    Limit.adaptive(initial = concurrency, min = 1, max = concurrency)

  def run(ctx: RequestContext): IO[Unit] =
    Pipeline(Stream.range(0L, ctx.n))
      .process(ctx.callAsync)
      .withLimit(limit(ctx.concurrency))
      .run
      .flatMap(s =>
        IO.raiseUnless(s.received == ctx.n && s.succeeded == ctx.n)(
          new IllegalStateException(s"weir adaptive did not run every request: $s")
        )
      )
