package weir.guide.durable

// docs/durable.md, "Workers": DocSnippetsSuite checks that the page's block is this code, verbatim.

import cats.effect.IO
import weir.{Limit, Pipeline, RateLimiter, Summary}
import weir.postgres.*

import scala.concurrent.duration.*

object Workers:
  def send(email: Email): IO[Unit] = IO.println(s"to ${email.to}: ${email.subject}")

  // works the queue until stop completes, then drains: running tasks get 30 s
  def serve(db: Database[IO], limiter: RateLimiter[IO], stop: IO[Unit]): IO[Summary[Job[Email]]] =
    DurableWorker
      .start[IO, Email, Unit](db, WorkerConfig(queue = "emails")) { source => // a Source[IO, Job[Email]]
        Pipeline(source)
          .process(job => send(job.payload))
          .withLimit(Limit.adaptive())
          .withRateLimit(limiter)
          .withTaskTimeout(30.seconds)
      }
      .use(worker => stop *> worker.drain(30.seconds))
