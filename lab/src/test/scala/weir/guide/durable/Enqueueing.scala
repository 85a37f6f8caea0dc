package weir.guide.durable

// docs/durable.md, "Enqueue": DocSnippetsSuite checks that the page's block is this code, verbatim.

import cats.effect.IO
import io.circe.Codec
import weir.postgres.*

import scala.concurrent.duration.*

final case class Email(to: String, subject: String) derives Codec.AsObject

final case class User(email: String)

final class Enqueueing(db: Database[IO]):
  val emails: TaskQueue[IO, Email] = TaskQueue[IO, Email](db, "emails")

  val hello: IO[Enqueued] = emails.enqueue(NewTask(Email("a@b.c", "hello")))

  // one transaction; the results in input order
  def news(users: Vector[User]): IO[Vector[Enqueued]] =
    emails.enqueueMany(users.map(u => NewTask(Email(u.email, "news"))))

  val due: IO[Enqueued] =
    val task = NewTask(Email("a@b.c", "due"), priority = 1, delay = 5.seconds, orderingKey = Some("acct-1"))
    emails.enqueue(task)

  def traced(traceparent: String): IO[Enqueued] =
    val task = NewTask(Email("a@b.c", "due"), headers = Map("traceparent" -> traceparent, "tenant" -> "t-7"))
    emails.enqueue(task)

  // Enqueued#taskId is the new task's id, or the holder's
  val welcome: IO[String] =
    emails.enqueue(NewTask(Email("a@b.c", "welcome"), uniqueKey = Some("welcome-42"))).map {
      case Enqueued.Inserted(id) => s"task $id inserted"
      // an unfinished task of the queue holds the key: nothing inserted
      case Enqueued.Duplicate(heldBy) => s"task $heldBy holds the key"
    }
