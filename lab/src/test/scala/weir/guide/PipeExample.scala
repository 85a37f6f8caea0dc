package weir.guide

// docs/guide.md: DocSnippetsSuite checks that the guide's block is this code, verbatim; GuideExamplesSuite runs it.

import cats.effect.IO
import fs2.Stream
import weir.*
import scala.concurrent.duration.*

object PipeExample:
  def resize(photo: Int): IO[String] = IO.sleep((photo % 5).millis).as(s"thumb $photo")
  val photos: Stream[IO, Int] = Stream.range(0, 500).covary[IO]

  // the pipe form, default settings: one outcome per task, as tasks finish
  val anyOrder: Stream[IO, TaskOutcome[Int, String]] = photos.through(Pipeline.pipe(resize))

  // the same with settings, set on the pipeline the pipe builds
  val inOrder: Stream[IO, String] =
    photos
      .through(Pipeline.pipe(resize, _.withLimit(Limit.fixed(16)).withOrder(TaskOrder.inputOrder)))
      .collect { case TaskOutcome.Succeeded(_, thumb, _) => thumb }
