package weir.guide.durable

// docs/durable.md, "Headers": DocSnippetsSuite checks that the page's block is this code, verbatim.

import cats.effect.{IO, Resource}
import weir.Pipeline
import weir.postgres.*

object Headers:
  def enqueue(emails: TaskQueue[IO, Email], traceparent: String): IO[Enqueued] =
    emails.enqueue(NewTask(Email("a@b.c", "hi"), headers = Map("traceparent" -> traceparent)))

  // withParent: your tracing library's way to run an effect as a child of a trace context
  def worker(
      db: Database[IO],
      send: Email => IO[Unit],
      withParent: Option[String] => IO[Unit] => IO[Unit]
  ): Resource[IO, DurableWorker[IO, Email]] =
    DurableWorker.start[IO, Email, Unit](db, WorkerConfig(queue = "emails")) { source =>
      Pipeline(source).process(job => withParent(job.headers.get("traceparent"))(send(job.payload)))
    }
