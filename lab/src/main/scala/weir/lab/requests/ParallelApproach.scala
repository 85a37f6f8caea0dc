package weir.lab.requests

import cats.effect.IO
import cats.syntax.all.*

/**
 * The write-up's first try, "parallel but not concurrent": `parTraverse` over every id, each request a
 * blocking call made straight on a compute thread. The pool has one thread per core, so at most that
 * many requests are in flight, whatever the concurrency asked for (and `parTraverse` still creates a
 * fiber per request up front).
 */
object ParallelApproach extends RequestApproach:
  val name = "parallel"
  val summary = "parTraverse of blocking calls on the compute pool: in flight = cores"
  override def placement: RequestApproach.Placement = RequestApproach.Placement.OwnPool

  def run(ctx: RequestContext): IO[Unit] =
    List.range(0L, ctx.n).parTraverse_(ctx.callOnThread)
