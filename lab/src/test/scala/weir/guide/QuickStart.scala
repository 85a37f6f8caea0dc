package weir.guide

// README.md, "Quick start": DocSnippetsSuite checks that the README's block is this code, verbatim.

import cats.effect.IO
import fs2.Stream
import weir.*
import weir.runtime.WeirApp
import scala.concurrent.duration.*

object QuickStart extends WeirApp.Simple:
  def fetch(feed: Int): IO[String] = IO.sleep(10.millis).as(s"feed $feed")

  def run: IO[Unit] =
    Pipeline(Source.partitioned[IO, Int](2)(p => Stream.range(p * 500, p * 500 + 500))) // two producers
      .process(fetch)
      .withLimit(Limit.fixed(100)) // at most 100 in flight
      .withRetry(Retry.exponential(base = 100.millis, maxAttempts = 3)) // then the failure policy
      .withFailurePolicy(FailurePolicy.skip)
      .start
      .use(running => IO.sleep(1.second) *> running.drain(deadline = 5.seconds))
      .flatMap(summary => IO.println(s"$summary, returned unstarted: ${summary.unstarted.size}"))
