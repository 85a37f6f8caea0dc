package weir.guide

// docs/guide.md: DocSnippetsSuite checks that the guide's block is this code, verbatim; GuideExamplesSuite runs it.

import cats.effect.IO
import fs2.Stream
import weir.*
import scala.concurrent.duration.*

object LimitsExample:
  def call(n: Int): IO[Int] = IO.sleep(5.millis).as(n)
  val tasks: Stream[IO, Int] = Stream.range(0, 10_000).covary[IO]

  // at most 64 in flight, at most 256 waiting between producers and workers
  val fixed: IO[Summary[Int]] = Pipeline(tasks).process(call).withLimit(Limit.fixed(64)).withBuffer(256).run

  // raised with immediate effect; lowering it interrupts nothing, tasks just stop starting
  val resized: IO[Summary[Int]] =
    Pipeline(tasks).process(call).withLimit(Limit.fixed(8)).start.use { running =>
      IO.sleep(1.second) *> running.setLimit(128) *> running.join
    }

  // the limit follows the attempts' latency and drops (errors, task timeouts); never told the capacity
  val adaptive: IO[Summary[Int]] =
    Pipeline(tasks)
      .process(call)
      .withLimit(Limit.adaptive(initial = 16, min = 4, max = 500, algorithm = AdaptiveAlgorithm.gradient()))
      .withTaskTimeout(2.seconds)
      .run
