package weir.guide

// docs/guide.md: DocSnippetsSuite checks that the guide's block is this code, verbatim; GuideExamplesSuite runs it.

import cats.effect.IO
import fs2.Stream
import weir.*
import scala.concurrent.duration.*

object ObserveExample:
  def work(n: Int): IO[Unit] = IO.sleep((n % 4).millis)
  val tasks: Stream[IO, Int] = Stream.range(0, 20_000).covary[IO]

  // a line a second from the counters, then the summary with its latency percentiles
  val run: IO[Summary[Int]] =
    Pipeline(tasks).process(work).withLimit(Limit.fixed(100)).start.use { running =>
      val log = running
        .metrics(every = 1.second)
        .evalMap(s => IO.println(s"${s.finished} of 20000 done, ${s.inFlight} in flight, limit ${s.limit}"))
      log.compile.drain.background.surround(running.join).flatTap { summary =>
        IO.println(s"${summary.received} received, p99 ${summary.latency.p99}, stop: ${summary.stop}")
      }
    }
