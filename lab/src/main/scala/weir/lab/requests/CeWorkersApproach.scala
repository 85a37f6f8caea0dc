package weir.lab.requests

import cats.effect.IO

import java.util.concurrent.atomic.AtomicLong

/**
 * Cats Effect alone, at its leanest: `concurrency` fibers, each taking the next id from one shared counter
 * and making its asynchronous call, until the ids run out. No stream, no buffer, no engine: what weir's
 * path costs on top of the runtime and the client is the difference between this and `weir`, which is
 * sharpest in a cold JVM (docs/lab/requests.md). Memory does not depend on N.
 */
object CeWorkersApproach extends RequestApproach:
  val name = "ce-workers"
  val summary = "Cats Effect only: concurrency fibers on a shared id counter, asynchronous client"

  def run(ctx: RequestContext): IO[Unit] =
    IO(new AtomicLong).flatMap { next =>
      lazy val worker: IO[Unit] = IO(next.getAndIncrement()).flatMap { id =>
        if id < ctx.n then ctx.callAsync(id) *> worker else IO.unit
      }
      worker.parReplicateA_(math.min(ctx.concurrency.toLong, ctx.n).toInt)
    }
