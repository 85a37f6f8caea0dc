package weir.guide

// docs/guide.md: DocSnippetsSuite checks that the guide's block is this code, verbatim; GuideExamplesSuite runs it.

import cats.effect.IO
import fs2.{Chunk, Stream}
import weir.*

object SourcesExample:
  def handle(n: Int): IO[Int] = IO.pure(n * 2)

  // one producer
  val single: Source[IO, Int] = Source(Stream.range(0, 1000).covary[IO])

  // several producers, run concurrently
  val several: Source[IO, Int] =
    Source.concurrent(Stream.range(0, 500).covary[IO], Stream.range(500, 1000).covary[IO])

  // n producers made from the partition number
  val partitioned: Source[IO, Int] = Source.partitioned[IO, Int](4)(p => Stream.range(p * 250, p * 250 + 250))

  // pages behind a cursor: the next page is fetched while the last one is processed
  def fetchPage(cursor: Int): IO[Page[Int, Int]] =
    IO.pure(Page(Chunk.from(cursor until cursor + 100), Option.when(cursor + 100 < 1000)(cursor + 100)))
  val paged: Source[IO, Int] = Source.paged[IO, Int, Int](0)(fetchPage)

  // sources merge: 2000 tasks from five producers
  val run: IO[Summary[Int]] = Pipeline(single.merge(partitioned)).process(handle).run
