package weir

import cats.effect.{Deferred, IO, Ref}
import cats.syntax.all.*
import fs2.Stream
import munit.CatsEffectSuite

import scala.concurrent.duration.*
import scala.util.Random

/**
 * The pool's ramp on the real runtime (Cats Effect's default one: this suite sets no timer), where a
 * producer's appends and the workers it starts truly race on two threads. Each run's first `limit` tasks
 * wait until `limit` tasks run at once, so a run in which a waiting task never got a worker while the pool
 * had room would hang (and fail on the suite's timeout); no
 * run may have more than `limit` tasks in flight. Sources of one-element chunks (`Stream.range`), which
 * grow the pool one worker per pull, and of one chunk, which grows it in one step.
 */
class RampSuite extends CatsEffectSuite:

  override def munitIOTimeout: Duration = 60.seconds

  private def once(seed: Long): IO[Unit] =
    val r = new Random(seed)
    val limit = 1 + r.nextInt(64)
    val n = limit + r.nextInt(3 * limit)
    val oneChunk = r.nextInt(4) == 0
    val shape = s"seed $seed: limit=$limit n=$n oneChunk=$oneChunk"
    for
      inFlight <- Ref.of[IO, (Int, Int)]((0, 0)) // (now, peak)
      full <- Deferred[IO, Unit]
      handler = (i: Int) =>
        inFlight
          .modify { (now, peak) =>
            val next = now + 1
            ((next, peak.max(next)), next)
          }
          .flatMap(now => full.complete(()).whenA(now == limit)) *>
          full.get.whenA(i < limit) *>
          inFlight.update((now, peak) => (now - 1, peak))
      source = if oneChunk then Stream.emits(0 until n).covary[IO] else Stream.range(0, n).covary[IO]
      summary <- Pipeline(source).process(handler).withLimit(Limit.fixed(limit)).run
      peak <- inFlight.get.map(_._2)
    yield
      assertEquals(summary.succeeded, n.toLong, shape)
      assertEquals(peak, limit, shape)

  test("one-element chunks or one chunk: the pool reaches its limit, and never more, on the real runtime") {
    (1L to 200L).toList.traverse_(once)
  }
