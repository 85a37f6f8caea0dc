package weir.guide

// docs/guide.md: DocSnippetsSuite checks that the guide's block is this code, verbatim; GuideExamplesSuite runs it.

import cats.effect.IO
import fs2.Stream
import weir.*
import scala.concurrent.duration.*

final class Busy extends RuntimeException("upstream busy")

object RetriesExample:
  def call(n: Int): IO[Int] = IO.sleep(10.millis).as(n)

  // an attempt longer than 2 s fails with TaskTimedOut; Busy and timeouts are retried up to 5 attempts in all
  val run: IO[Summary[Int]] =
    Pipeline(Stream.range(0, 1000).covary[IO])
      .process(call)
      .withTaskTimeout(2.seconds)
      .withRetry(
        Retry
          .exponential(base = 100.millis, maxAttempts = 5, maxDelay = 10.seconds, jitter = Retry.Jitter.Full)
          .retryOn {
            case _: Busy | _: TaskTimedOut => true
            case _ => false
          }
      )
      .run
