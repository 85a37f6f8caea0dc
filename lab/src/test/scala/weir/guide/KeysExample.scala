package weir.guide

// docs/guide.md: DocSnippetsSuite checks that the guide's block is this code, verbatim; GuideExamplesSuite runs it.

import cats.effect.IO
import fs2.Stream
import weir.*
import scala.concurrent.duration.*

final case class Transfer(account: String, amount: Long)

object KeysExample:
  def book(t: Transfer): IO[Unit] = IO.sleep((t.amount % 3).millis)
  val transfers: Stream[IO, Transfer] =
    Stream.range(0, 1000).covary[IO].map(i => Transfer(s"account-${i % 10}", i.toLong))

  // per account one at a time, in input order; different accounts run concurrently within the limit
  val run: IO[Summary[Transfer]] =
    Pipeline(transfers)
      .process(book)
      .withLimit(Limit.fixed(8))
      .withOrder(TaskOrder.byKey((t: Transfer) => t.account))
      .run
