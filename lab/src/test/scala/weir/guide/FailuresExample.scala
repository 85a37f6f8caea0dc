package weir.guide

// docs/guide.md: DocSnippetsSuite checks that the guide's block is this code, verbatim; GuideExamplesSuite runs it.

import cats.effect.{IO, Ref}
import fs2.Stream
import weir.*

object FailuresExample:
  def parse(line: String): IO[Int] = IO(line.trim.toInt)
  val lines: Stream[IO, String] = Stream("1", "2", "x", "4").covary[IO]

  // record the failure and go on (the default)
  val skipping: IO[Summary[String]] = Pipeline(lines).process(parse).withFailurePolicy(FailurePolicy.skip).run

  // hand each failed task and its error to a sink of your own
  val deadLettering: IO[Vector[String]] =
    Ref.of[IO, Vector[String]](Vector.empty).flatMap { dead =>
      Pipeline(lines)
        .process(parse)
        .withFailurePolicy(FailurePolicy.deadLetter[IO, String]((line, _) => dead.update(_ :+ line)))
        .run *> dead.get
    }

  // stop at the first failure: nothing new starts, in-flight tasks are interrupted, the rest is returned
  val failingFast: IO[Summary[String]] =
    Pipeline(lines).process(parse).withFailurePolicy(FailurePolicy.failFast).run
