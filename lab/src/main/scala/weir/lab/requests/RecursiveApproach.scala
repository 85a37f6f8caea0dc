package weir.lab.requests

import cats.effect.IO
import cats.effect.std.Semaphore

/**
 * The write-up's final answer: take a permit, start the rest of the requests on a new fiber (which takes
 * its own permit first, so no more than `concurrency` fibers are ever waiting to send), make this
 * request (a blocking call in `IO.blocking`), give the permit back, then join the rest.
 *
 * Reproduced as written, with one change of form: the rest runs as a `background` resource instead of a
 * bare `start` (it is joined before the resource is released, so nothing is cancelled). Ids go up (the
 * write-up counts down), so requests start in the same order as the ideal schedule's. Every fiber waits
 * for the next one to end before it ends itself, so finished requests stay in memory as a chain of
 * suspended joins until the last request ends: the heap grows with N, slowly.
 */
object RecursiveApproach extends RequestApproach:
  val name = "recursive"
  val summary = "the write-up's answer: permit, start the rest recursively, blocking call, release, join"

  def run(ctx: RequestContext): IO[Unit] =
    Semaphore[IO](ctx.concurrency.toLong).flatMap { sem =>
      def prog(id: Long): IO[Unit] =
        if id >= ctx.n then IO.unit
        else
          // flatMap, not *>: the rest must be built when this permit is taken, not all up front
          sem.acquire.flatMap(_ =>
            prog(id + 1).background.use { rest =>
              ctx.callBlocking(id) *> sem.release *> rest.flatMap(_.embedNever)
            }
          )
      prog(0L)
    }
