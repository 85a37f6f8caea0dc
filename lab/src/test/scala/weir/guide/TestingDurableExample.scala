package weir.guide

// docs/guide.md, "Testing your handlers": DocSnippetsSuite checks that the guide's blocks are this code,
// verbatim; GuideExamplesSuite runs them.

import cats.effect.IO
import io.circe.Codec
import weir.postgres.Job
import weir.testkit.postgres.TestJob

final case class Receipt(id: Long, cents: Long) derives Codec.AsObject

object ReceiptHandler:
  // the last attempt warns a person instead of failing once more
  def handle(warn: String => IO[Unit])(job: Job[Receipt]): IO[Unit] =
    if job.attempt == job.maxAttempts then warn(s"receipt ${job.payload.id} of ${job.headers("tenant")}")
    else IO.raiseError(new RuntimeException("the mail service is down"))

object ReceiptHandlerTest:
  val lastAttemptWarns: IO[List[String]] =
    for
      built <- TestJob(Receipt(7, 1200), attempt = 5, maxAttempts = 5, headers = Map("tenant" -> "acme"))
        .build[IO]
      warned <- IO.ref(List.empty[String])
      _ <- ReceiptHandler.handle(w => warned.update(_ :+ w))(built.job)
      warnings <- warned.get
    yield warnings // List("receipt 7 of acme")
