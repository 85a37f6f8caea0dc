package weir.guide

// README.md, "Durable mode": DocSnippetsSuite checks that the README's block is this code, verbatim.

import cats.effect.IO
import io.circe.Codec
import weir.*
import weir.postgres.*
import scala.concurrent.duration.*

final case class Email(to: String, body: String) derives Codec.AsObject

object DurableQuickStart:
  def send(email: Email): IO[Unit] = IO.println(s"to ${email.to}: ${email.body}")

  def run(url: String): IO[Unit] =
    Database.migrateAndConnect[IO](DatabaseConfig(url)).use { db =>
      val emails = TaskQueue[IO, Email](db, "emails")
      emails.enqueue(NewTask(Email("a@b.c", "hello"), orderingKey = Some("account-7"))) *>
        DurableWorker
          .start[IO, Email, Unit](db, WorkerConfig(queue = "emails")) { source =>
            Pipeline(source).process(job => send(job.payload)).withLimit(Limit.fixed(50))
          }
          .use(worker => IO.sleep(10.seconds) *> worker.drain(10.seconds).void)
    }
