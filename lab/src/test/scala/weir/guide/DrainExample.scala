package weir.guide

// docs/guide.md: DocSnippetsSuite checks that the guide's block is this code, verbatim; GuideExamplesSuite runs it.

import cats.effect.IO
import fs2.Stream
import weir.*
import scala.concurrent.duration.*

object DrainExample:
  def work(n: Int): IO[Unit] = IO.sleep((40 + n % 20).millis)
  val tasks: Stream[IO, Int] = Stream.range(0, 100_000).covary[IO]

  // stop taking tasks, give the in-flight ones 5 s, interrupt the rest; every unstarted task comes back
  val drained: IO[Vector[Int]] =
    Pipeline(tasks)
      .process(work)
      .start
      .use(running => IO.sleep(1.second) *> running.drain(deadline = 5.seconds))
      .map(_.unstarted)

  // leaving `use` (or cancelling `run`) stops the same way, with the release grace as the deadline
  val released: IO[Unit] =
    Pipeline(tasks).process(work).withReleaseGrace(2.seconds).start.use(_ => IO.sleep(1.second))
