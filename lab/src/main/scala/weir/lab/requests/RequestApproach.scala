package weir.lab.requests

import cats.effect.IO

/**
 * One way of sending requests `0 until n` with at most `concurrency` in flight, after seed 002's write-up
 * (see each file for which attempt it reproduces). Every request goes through the [[RequestContext]]
 * (counted, timed, its errors recorded); `run` ends when every request has ended.
 */
trait RequestApproach:
  def name: String
  def summary: String
  def placement: RequestApproach.Placement = RequestApproach.Placement.InProcess
  def run(ctx: RequestContext): IO[Unit]

object RequestApproach:

  /** Where the runner runs an approach. */
  enum Placement:
    /** On the lab's runtime. */
    case InProcess

    /** On a runtime of its own whose compute pool is this many fixed threads (one per core by default). */
    case OwnPool

    /**
     * In a child JVM with a capped heap, so that running out of memory is reported, not fatal to the lab.
     */
    case ChildJvm

  /**
   * Every approach, in the write-up's order, then Cats Effect's worker fibers alone, then weir with a fixed
   * and with an adaptive limit.
   */
  val all: Vector[RequestApproach] = Vector(
    ParallelApproach,
    UpFrontApproach,
    RecursiveApproach,
    CeWorkersApproach,
    WeirFixedApproach,
    WeirAdaptiveApproach
  )

  def byName(name: String): Option[RequestApproach] = all.find(_.name == name)

/**
 * What an approach sends requests with.
 *
 * @param callAsync    request `id` with the asynchronous client (no thread blocked while it waits)
 * @param callBlocking request `id` with the JDK client's blocking `send` inside `IO.blocking` (the
 *                     write-up's `Sync[IO].blocking(client.send(...))`: a blocking-pool thread per request)
 * @param callOnThread request `id` with the blocking `send` on the current thread (`IO(...)`: it blocks a
 *                     compute thread, as the write-up's first try did)
 */
final case class RequestContext(
    n: Long,
    concurrency: Int,
    callAsync: Long => IO[Unit],
    callBlocking: Long => IO[Unit],
    callOnThread: Long => IO[Unit]
)
