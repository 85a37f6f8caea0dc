package weir.lab.requests

import cats.effect.IO
import fs2.Stream
import weir.*

/**
 * weir with an adaptive limit: the same pipeline as [[WeirFixedApproach]] under `Limit.adaptive` with
 * AIMD learning from failures only (no latency threshold), allowed anywhere in `[1, concurrency]` and
 * starting at `concurrency`: a request that fails or times out cuts the limit by 10% per window, clean
 * windows add one back.
 *
 * Why not the default gradient: it reads a rise of the least latency of a window above the least ever
 * seen as queueing. Here every request's latency is its own random delay, 0 to 3 s by design, so a window
 * of a few requests has a least latency far above the best ever (a request of delay ~0) with no queue at
 * all: on the 100,000-request run the gradient halved the limit window after window and the run finished
 * 8,189 requests in 125 s (ADR 0011). The delay server gives no latency signal of load; failures are the
 * signal that is left. Starting low instead would measure the ramp, not the client.
 */
object WeirAdaptiveApproach extends RequestApproach:
  val name = "weir-adaptive"
  val summary =
    "weir's Pipeline under Limit.adaptive(initial = max = concurrency, AIMD on failures), asynchronous client"

  def limit(concurrency: Int): Limit =
    Limit.adaptive(initial = concurrency, min = 1, max = concurrency, algorithm = AdaptiveAlgorithm.aimd())

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
