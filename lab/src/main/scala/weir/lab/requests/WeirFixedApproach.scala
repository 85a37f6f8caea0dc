package weir.lab.requests

import cats.effect.IO
import fs2.Stream
import weir.*

/**
 * weir with a fixed limit: the ids as a lazy stream, `Limit.fixed(concurrency)`, asynchronous calls,
 * outcomes unordered. Memory does not depend on N: the source is generated as it is consumed, the buffer
 * holds at most 1024 ids and only failed requests are kept.
 */
object WeirFixedApproach extends RequestApproach:
  val name = "weir"
  val summary = "weir's Pipeline over a lazy id stream, Limit.fixed(concurrency), asynchronous client"

  def run(ctx: RequestContext): IO[Unit] =
    Pipeline(Stream.range(0L, ctx.n))
      .process(ctx.callAsync)
      .withLimit(Limit.fixed(ctx.concurrency))
      .run
      .flatMap(s =>
        IO.raiseUnless(s.received == ctx.n && s.succeeded == ctx.n)(
          new IllegalStateException(s"weir did not run every request: $s")
        )
      )
