package weir.lab.requests

import cats.effect.IO
import cats.effect.std.Semaphore
import cats.syntax.all.*

/**
 * The write-up's second try: every request is created up front as a fiber (`parTraverse` over the whole
 * id list) and gated by a semaphore of `concurrency` permits around a blocking call in `IO.blocking`. The
 * concurrency is right, but memory grows with N (a list of N ids and N fibers waiting on the semaphore),
 * so the runner puts it in a child JVM with a capped heap and reports its peak heap or the out-of-memory.
 */
object UpFrontApproach extends RequestApproach:
  val name = "up-front"
  val summary = "N fibers created at once, a semaphore of `concurrency` permits, blocking calls"
  override def placement: RequestApproach.Placement = RequestApproach.Placement.ChildJvm

  def run(ctx: RequestContext): IO[Unit] =
    Semaphore[IO](ctx.concurrency.toLong).flatMap { sem =>
      List.range(0L, ctx.n).parTraverse_(id => sem.permit.surround(ctx.callBlocking(id)))
    }
