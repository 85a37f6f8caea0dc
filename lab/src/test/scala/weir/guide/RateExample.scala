package weir.guide

// docs/guide.md: DocSnippetsSuite checks that the guide's block is this code, verbatim; GuideExamplesSuite runs it.

import cats.effect.IO
import fs2.Stream
import weir.*

object RateExample:
  def call(n: Int): IO[Int] = IO.pure(n)

  // 500 permits per second after a burst of 50; the two pipelines share the limiter, so they share its rate
  val run: IO[(Summary[Int], Summary[Int])] =
    RateLimiter.tokenBucket[IO](permitsPerSecond = 500, burst = 50).flatMap { limiter =>
      val a = Pipeline(Stream.range(0, 300).covary[IO]).process(call).withRateLimit(limiter).run
      val b = Pipeline(Stream.range(0, 300).covary[IO]).process(call).withRateLimit(limiter).run
      IO.both(a, b)
    }
