package weir.guide

// docs/guide.md: DocSnippetsSuite checks that the guide's block is this code, verbatim; GuideExamplesSuite runs it.

import cats.effect.IO
import fs2.Stream
import weir.*
import scala.concurrent.duration.*

object OrderExample:
  def render(page: Int): IO[String] = IO.sleep((page % 7).millis).as(s"page $page")

  // results in input order; a task starts only once every task more than 256 places before it has finished
  val inOrder: Stream[IO, String] =
    Pipeline(Stream.range(0, 1000).covary[IO])
      .process(render)
      .withLimit(Limit.fixed(32))
      .withOrder(TaskOrder.inputOrder(window = 256))
      .outcomes
      .collect { case TaskOutcome.Succeeded(_, html, _) => html }
